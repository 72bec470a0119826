//! The driver's side of the name index: per name, counted contributions of
//! every indexed file (definitions, launch sites, call edges), folded in and
//! out one file at a time, and pushed into the salsa [`NameEntry`] inputs
//! only for the names whose entry really changed. The cost of an edit is
//! proportional to the symbols of the files it changed, not to the size of
//! the workspace.

use crate::db::{Database, DefRef, FileSymbols, NameEntry, SourceFile, Workspace};
use crate::facts::LaunchDims;
use salsa::Setter;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Counted contributions to one name.
#[derive(Default, Debug)]
struct NameData {
    /// Definitions by (file path, key).
    defs: BTreeMap<(PathBuf, String), DefRef>,
    /// Launch sites.
    launches: BTreeMap<LaunchDims, u32>,
    /// (caller, caller is a kernel) → number of (file, caller) edges.
    callers: BTreeMap<(String, bool), u32>,
    /// callee → number of edges.
    callees: BTreeMap<String, u32>,
}

impl NameData {
    fn is_empty(&self) -> bool {
        self.defs.is_empty()
            && self.launches.is_empty()
            && self.callers.is_empty()
            && self.callees.is_empty()
    }
}

/// The name index of a workspace.
#[derive(Default)]
pub struct NameIndex {
    data: HashMap<String, NameData>,
    inputs: HashMap<String, NameEntry>,
    /// Names touched since the last [`NameIndex::flush`].
    touched: BTreeSet<String>,
}

fn bump<K: Ord>(m: &mut BTreeMap<K, u32>, k: K, add: bool) {
    if add {
        *m.entry(k).or_default() += 1;
    } else if let Some(n) = m.get_mut(&k) {
        *n -= 1;
        if *n == 0 {
            m.remove(&k);
        }
    }
}

impl NameIndex {
    /// Fold a file's symbols in: `file` is its input.
    pub fn add(&mut self, file: SourceFile, path: &Path, s: &FileSymbols) {
        self.apply(Some(file), path, s);
    }

    /// Fold a file's symbols out.
    pub fn remove(&mut self, path: &Path, s: &FileSymbols) {
        self.apply(None, path, s);
    }

    fn apply(&mut self, file: Option<SourceFile>, path: &Path, s: &FileSymbols) {
        let add = file.is_some();
        for d in &s.defs {
            let e = self.data.entry(d.name.clone()).or_default();
            let k = (path.to_path_buf(), d.key.clone());
            if let Some(file) = file {
                e.defs.insert(
                    k,
                    DefRef {
                        file,
                        key: d.key.clone(),
                        kind: d.kind,
                        template_slots: d.template_slots,
                    },
                );
            } else {
                e.defs.remove(&k);
            }
            self.touched.insert(d.name.clone());
        }
        for (kernel, dims) in &s.launches {
            bump(
                &mut self.data.entry(kernel.clone()).or_default().launches,
                *dims,
                add,
            );
            self.touched.insert(kernel.clone());
        }
        for c in &s.calls {
            bump(
                &mut self.data.entry(c.callee.clone()).or_default().callers,
                (c.caller.clone(), c.caller_is_kernel),
                add,
            );
            bump(
                &mut self.data.entry(c.caller.clone()).or_default().callees,
                c.callee.clone(),
                add,
            );
            self.touched.insert(c.callee.clone());
            self.touched.insert(c.caller.clone());
        }
    }

    /// Push the touched names into their salsa inputs; returns the names
    /// whose entry changed (created, removed or different).
    pub fn flush(&mut self, db: &mut Database, ws: Workspace) -> BTreeSet<String> {
        let mut changed = BTreeSet::new();
        let mut map_changed = false;
        for name in std::mem::take(&mut self.touched) {
            let data = self.data.get(&name);
            if data.is_none_or(NameData::is_empty) {
                self.data.remove(&name);
                if self.inputs.remove(&name).is_some() {
                    map_changed = true;
                    changed.insert(name);
                }
                continue;
            }
            let Some(data) = data else { continue };
            let defs: Vec<DefRef> = data.defs.values().cloned().collect();
            let launches: Vec<LaunchDims> = data.launches.keys().copied().collect();
            let callers: Vec<(String, bool)> = data.callers.keys().cloned().collect();
            let callees: Vec<String> = data.callees.keys().cloned().collect();
            match self.inputs.get(&name) {
                None => {
                    let e = NameEntry::new(&*db, defs, launches, callers, callees);
                    self.inputs.insert(name.clone(), e);
                    map_changed = true;
                    changed.insert(name);
                }
                Some(&e) => {
                    let mut diff = false;
                    if e.defs(&*db) != &defs {
                        e.set_defs(db).to(defs);
                        diff = true;
                    }
                    if e.launches(&*db) != &launches {
                        e.set_launches(db).to(launches);
                        diff = true;
                    }
                    if e.callers(&*db) != &callers {
                        e.set_callers(db).to(callers);
                        diff = true;
                    }
                    if e.callees(&*db) != &callees {
                        e.set_callees(db).to(callees);
                        diff = true;
                    }
                    if diff {
                        changed.insert(name);
                    }
                }
            }
        }
        if map_changed {
            ws.set_names(db).to(Arc::new(self.inputs.clone()));
        }
        changed
    }

    /// The definitions of a name: (file path, key).
    pub fn defs(&self, name: &str) -> impl Iterator<Item = (&PathBuf, &String)> {
        self.data
            .get(name)
            .into_iter()
            .flat_map(|d| d.defs.keys().map(|(p, k)| (p, k)))
    }

    /// Every name reachable from `start` through callers (`backward`) or
    /// callees, `start` included.
    pub fn closure(&self, start: &BTreeSet<String>, backward: bool) -> BTreeSet<String> {
        let mut seen = start.clone();
        let mut work: Vec<String> = start.iter().cloned().collect();
        while let Some(n) = work.pop() {
            let Some(d) = self.data.get(&n) else { continue };
            let next: Vec<&String> = if backward {
                d.callers.keys().map(|(c, _)| c).collect()
            } else {
                d.callees.keys().collect()
            };
            for m in next {
                if seen.insert(m.clone()) {
                    work.push(m.clone());
                }
            }
        }
        seen
    }
}
