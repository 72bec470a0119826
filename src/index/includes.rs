//! The include graph of the indexed files: which headers each file's
//! `#include "…"` resolves to, who includes whom, and who probed which
//! candidate path (so that creating or deleting a file re-resolves only the
//! includes it can affect).

use crate::db::include_candidates;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Resolved includes and their reverse maps.
#[derive(Default, Debug)]
pub struct IncludeGraph {
    /// Includes as written, per file.
    written: HashMap<PathBuf, Vec<String>>,
    /// Resolved targets, per file (in the order written; unresolved left
    /// out).
    resolved: HashMap<PathBuf, Vec<PathBuf>>,
    /// Target → files whose includes resolve to it.
    includers: HashMap<PathBuf, BTreeSet<PathBuf>>,
    /// Candidate path → files that tried it.
    probers: HashMap<PathBuf, BTreeSet<PathBuf>>,
    /// Candidate paths each file tried.
    probed: HashMap<PathBuf, Vec<PathBuf>>,
}

impl IncludeGraph {
    /// Set the includes of `file` (as written), resolving each against the
    /// files for which `exists` holds; returns whether its resolved targets
    /// changed.
    pub fn set(
        &mut self,
        file: &Path,
        written: &[String],
        include_dirs: &[PathBuf],
        exists: &dyn Fn(&Path) -> bool,
    ) -> bool {
        let old = self.remove(file);
        let mut resolved = Vec::new();
        let mut probed = Vec::new();
        for name in written {
            let candidates = include_candidates(file, name, include_dirs);
            for c in &candidates {
                self.probers
                    .entry(c.clone())
                    .or_default()
                    .insert(file.to_path_buf());
                probed.push(c.clone());
            }
            if let Some(t) = candidates.into_iter().find(|c| exists(c)) {
                self.includers
                    .entry(t.clone())
                    .or_default()
                    .insert(file.to_path_buf());
                resolved.push(t);
            }
        }
        let changed = old.as_ref() != Some(&resolved);
        self.written.insert(file.to_path_buf(), written.to_vec());
        self.resolved.insert(file.to_path_buf(), resolved);
        self.probed.insert(file.to_path_buf(), probed);
        changed
    }

    /// Forget `file`'s includes; returns its resolved targets.
    pub fn remove(&mut self, file: &Path) -> Option<Vec<PathBuf>> {
        let written = self.written.remove(file)?;
        let resolved = self.resolved.remove(file).unwrap_or_default();
        for t in &resolved {
            if let Some(s) = self.includers.get_mut(t) {
                s.remove(file);
                if s.is_empty() {
                    self.includers.remove(t);
                }
            }
        }
        let _ = written;
        for c in self.probed.remove(file).unwrap_or_default() {
            if let Some(s) = self.probers.get_mut(&c) {
                s.remove(file);
                if s.is_empty() {
                    self.probers.remove(&c);
                }
            }
        }
        Some(resolved)
    }

    /// The includes of `file` as written (if known).
    pub fn written(&self, file: &Path) -> Option<&[String]> {
        self.written.get(file).map(Vec::as_slice)
    }

    /// The resolved targets of `file`.
    pub fn targets(&self, file: &Path) -> &[PathBuf] {
        self.resolved.get(file).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Files that tried `candidate` when resolving an include.
    pub fn probers(&self, candidate: &Path) -> impl Iterator<Item = &PathBuf> {
        self.probers.get(candidate).into_iter().flatten()
    }

    /// `files` and every file that includes one of them, transitively; and
    /// (issue 8) every source file they include, whose scan starts in its
    /// includer's scope (`db::include_context`).
    pub fn with_includers(&self, files: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
        let mut seen = files.clone();
        let mut work: Vec<PathBuf> = files.iter().cloned().collect();
        while let Some(f) = work.pop() {
            let sources = self
                .targets(&f)
                .iter()
                .filter(|t| crate::db::is_included_source(t));
            for i in self.includers.get(&f).into_iter().flatten().chain(sources) {
                if seen.insert(i.clone()) {
                    work.push(i.clone());
                }
            }
        }
        seen
    }

    /// What the scan of `file` can read: [`IncludeGraph::reach`], and for a
    /// source file included by others (issue 8), its includers' reach too.
    pub fn context_reach(&self, file: &Path) -> BTreeSet<PathBuf> {
        let mut seen = self.reach(file);
        let mut work = vec![file.to_path_buf()];
        let mut done = BTreeSet::new();
        while let Some(f) = work.pop() {
            if !done.insert(f.clone()) || !crate::db::is_included_source(&f) {
                continue;
            }
            for i in self.includers.get(&f).into_iter().flatten() {
                seen.extend(self.reach(i));
                work.push(i.clone());
            }
        }
        seen
    }

    /// `file` and everything it includes, transitively, sorted.
    pub fn reach(&self, file: &Path) -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::from([file.to_path_buf()]);
        let mut work = vec![file.to_path_buf()];
        while let Some(f) = work.pop() {
            for t in self.targets(&f) {
                if seen.insert(t.clone()) {
                    work.push(t.clone());
                }
            }
        }
        seen
    }
}
