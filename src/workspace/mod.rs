//! Finding and reading a workspace's source files.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Extensions of files whose functions are indexed.
pub const SOURCE_EXTENSIONS: &[&str] = &["cu", "cuh"];
/// Extensions of headers loaded so that local `#include`s resolve; their
/// functions are indexed only when a source file includes them. C files
/// count (issue 8): Rodinia's `#include "define.c"` holds the macros and
/// types its kernels use.
pub const HEADER_EXTENSIONS: &[&str] = &["h", "hpp", "hh", "hxx", "inl", "cuh", "c"];

/// Whether `path` is a CUDA source (`.cu`, `.cuh`).
pub fn is_source(path: &Path) -> bool {
    ext_in(path, SOURCE_EXTENSIONS)
}

/// Whether `path` is a header the indexer loads.
pub fn is_header(path: &Path) -> bool {
    ext_in(path, HEADER_EXTENSIONS)
}

fn ext_in(path: &Path, list: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .map(|e| list.iter().any(|x| x.eq_ignore_ascii_case(e)))
        .unwrap_or(false)
}

/// Why one path of the workspace could not be read. Each becomes a
/// diagnostic of that path instead of aborting the run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read this file: {0}")]
    Unreadable(String),
    /// A directory could not be listed: the sources in it are not indexed.
    #[error("cannot read this directory: {0}; the files in it are not indexed")]
    UnreadableDir(String),
    /// The file is larger than `[index] max_file_bytes`.
    #[error(
        "file is {bytes} bytes, more than [index] max_file_bytes = {limit}; not indexed \
         (raise the limit in cudalog.toml to index it)"
    )]
    TooLarge {
        /// Size of the file.
        bytes: u64,
        /// The configured limit.
        limit: u64,
    },
    /// A symbolic link whose target does not exist (or cannot be read).
    #[error("broken symbolic link: {0}")]
    BrokenLink(String),
    /// A symbolic link to one of its own ancestor directories.
    #[error("symbolic link loop back to {0}; not followed")]
    LinkLoop(String),
}

impl LoadError {
    /// Diagnostic code.
    pub fn code(&self) -> &'static str {
        match self {
            LoadError::Unreadable(_) | LoadError::UnreadableDir(_) => "unreadable",
            LoadError::TooLarge { .. } => "file-too-large",
            LoadError::BrokenLink(_) | LoadError::LinkLoop(_) => "symlink",
        }
    }

    /// Diagnostic severity: a file or directory that should have been read
    /// and was not is an error; links and size limits are warnings.
    pub fn severity(&self) -> &'static str {
        match self {
            LoadError::Unreadable(_) | LoadError::UnreadableDir(_) => "error",
            _ => "warning",
        }
    }
}

/// One path of the workspace: its bytes, or why they could not be read.
#[derive(Debug)]
pub struct Loaded {
    /// Path relative to the root (a directory's ends with `/`).
    pub rel: PathBuf,
    /// The file's bytes, or the reason there are none.
    pub content: Result<Vec<u8>, LoadError>,
}

/// Read every source and header under `root` (as [`discover`] finds them,
/// symbolic links followed): per path, its bytes or why not — an unreadable
/// file or directory, a broken link, a link loop, or a file larger than
/// `max_bytes`. Fails only when `root` itself is not a readable directory
/// or an exclude pattern is invalid.
pub fn load(root: &Path, exclude: &[String], max_bytes: u64) -> Result<Vec<Loaded>> {
    load_with(root, exclude, max_bytes, &|p| std::fs::read(p))
}

/// [`load`] with the file reader given (tests inject failures with it).
pub fn load_with(
    root: &Path,
    exclude: &[String],
    max_bytes: u64,
    read: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<Loaded>> {
    let mut out = Vec::new();
    for (rel, problem) in walk_checked(root, exclude)? {
        let content = match problem {
            Some(e) => Err(e),
            None => read_checked(&root.join(&rel), max_bytes, read),
        };
        out.push(Loaded { rel, content });
    }
    Ok(out)
}

/// Read one file found by [`walk_checked`]: its bytes, or why not (larger
/// than `max_bytes`, or unreadable).
pub fn read_checked(
    full: &Path,
    max_bytes: u64,
    read: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
) -> std::result::Result<Vec<u8>, LoadError> {
    let size = std::fs::metadata(full).map(|m| m.len()).unwrap_or(0);
    if size > max_bytes {
        return Err(LoadError::TooLarge {
            bytes: size,
            limit: max_bytes,
        });
    }
    read(full).map_err(|e| LoadError::Unreadable(e.to_string()))
}

/// The full walk of `root` for a run (symbolic links followed): relative
/// paths of sources and headers, and of the paths that could not be walked
/// (with why), sorted.
pub fn walk_checked(root: &Path, exclude: &[String]) -> Result<Vec<(PathBuf, Option<LoadError>)>> {
    let meta = std::fs::metadata(root)
        .with_context(|| format!("cannot read directory {}", root.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("{} is not a directory", root.display());
    }
    std::fs::read_dir(root).with_context(|| format!("cannot read directory {}", root.display()))?;
    let mut overrides = ignore::overrides::OverrideBuilder::new(root);
    for pat in exclude {
        overrides
            .add(&format!("!{pat}"))
            .with_context(|| format!("invalid exclude pattern `{pat}` in cudalog.toml"))?;
    }
    // Never index our own database directory.
    overrides.add("!.cudalog/")?;
    let walker = ignore::WalkBuilder::new(root)
        .overrides(overrides.build()?)
        .hidden(true)
        .require_git(false)
        .follow_links(true)
        .build();
    let mut out = Vec::new();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                if let Some(problem) = walk_problem(root, &err) {
                    out.push(problem);
                } else {
                    tracing::warn!("{err}");
                }
                continue;
            }
        };
        if !entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
            continue;
        }
        let p = entry.path();
        if !(is_source(p) || is_header(p)) {
            continue;
        }
        if let Ok(rel) = p.strip_prefix(root) {
            out.push((rel.to_path_buf(), None));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The path and reason of a walk error that loses sources: an unreadable
/// directory, a broken link or a link loop (`None` for other errors, such
/// as a bad pattern in a `.gitignore`, and for paths that are neither
/// directories nor sources or headers).
fn walk_problem(root: &Path, err: &ignore::Error) -> Option<(PathBuf, Option<LoadError>)> {
    match err {
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            walk_problem(root, err)
        }
        ignore::Error::Loop { ancestor, child } => {
            let rel = child.strip_prefix(root).ok()?.to_path_buf();
            let to = ancestor.strip_prefix(root).unwrap_or(ancestor);
            Some((
                dir_path(rel),
                Some(LoadError::LinkLoop(display_path(to) + "/")),
            ))
        }
        ignore::Error::WithPath { path, err } => {
            let ignore::Error::Io(io) = innermost(err) else {
                return None;
            };
            let rel = path.strip_prefix(root).ok()?.to_path_buf();
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if link && std::fs::metadata(path).is_err() {
                if !(is_source(&rel) || is_header(&rel)) {
                    // A dangling link to something we would not read.
                    return None;
                }
                return Some((rel, Some(LoadError::BrokenLink(io.to_string()))));
            }
            if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                return Some((
                    dir_path(rel),
                    Some(LoadError::UnreadableDir(io.to_string())),
                ));
            }
            (is_source(&rel) || is_header(&rel))
                .then(|| (rel, Some(LoadError::Unreadable(io.to_string()))))
        }
        _ => None,
    }
}

fn innermost(err: &ignore::Error) -> &ignore::Error {
    match err {
        ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. }
        | ignore::Error::WithPath { err, .. } => innermost(err),
        other => other,
    }
}

/// A directory's relative path, marked with a trailing `/`.
fn dir_path(rel: PathBuf) -> PathBuf {
    let mut s = rel.into_os_string();
    s.push("/");
    PathBuf::from(s)
}

/// Walk `root` (honouring .gitignore/.ignore and the configured excludes),
/// returning relative paths of sources and headers, sorted.
pub fn discover(root: &Path, exclude: &[String]) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(root)
        .with_context(|| format!("cannot read directory {}", root.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("{} is not a directory", root.display());
    }
    discover_in(root, Path::new(""), exclude, true)
}

/// Like [`discover`], for the part of the workspace under `sub` (relative
/// to `root`): everything below it, or with `recursive` false only its
/// direct entries. The ignore files of `root` and of every directory down
/// to `sub` apply as they do for a walk from `root`, but whether `sub`
/// itself is admitted is the caller's question (see [`list_dir`]). A `sub`
/// that does not exist (or is not a directory) yields nothing.
pub fn discover_in(
    root: &Path,
    sub: &Path,
    exclude: &[String],
    recursive: bool,
) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = walk(root, sub, exclude, (!recursive).then_some(1))?
        .into_iter()
        .filter(|(p, dir)| !dir && (is_source(p) || is_header(p)))
        .map(|(p, _)| p)
        .collect();
    out.sort();
    Ok(out)
}

/// The direct entries of directory `sub` (relative to `root`) that a walk
/// from `root` would admit (ignore files, hidden names and the configured
/// excludes applied), as relative paths with whether each is a directory.
pub fn list_dir(root: &Path, sub: &Path, exclude: &[String]) -> Result<Vec<(PathBuf, bool)>> {
    walk(root, sub, exclude, Some(1))
}

/// The entries below `root/sub` (not `sub` itself) that a walk from `root`
/// admits, to `max_depth` levels.
fn walk(
    root: &Path,
    sub: &Path,
    exclude: &[String],
    max_depth: Option<usize>,
) -> Result<Vec<(PathBuf, bool)>> {
    let start = root.join(sub);
    if !start.is_dir() {
        return Ok(Vec::new());
    }
    let mut overrides = ignore::overrides::OverrideBuilder::new(root);
    for pat in exclude {
        overrides
            .add(&format!("!{pat}"))
            .with_context(|| format!("invalid exclude pattern `{pat}` in cudalog.toml"))?;
    }
    // Never index our own database directory.
    overrides.add("!.cudalog/")?;
    let walker = ignore::WalkBuilder::new(&start)
        .overrides(overrides.build()?)
        .hidden(true)
        .parents(true)
        .require_git(false)
        .max_depth(max_depth)
        .build();
    let mut out = Vec::new();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                tracing::warn!("skipping unreadable entry: {err}");
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let Some(t) = entry.file_type() else {
            continue;
        };
        if !(t.is_file() || t.is_dir()) {
            continue;
        }
        if let Ok(rel) = entry.path().strip_prefix(root) {
            out.push((rel.to_path_buf(), t.is_dir()));
        }
    }
    Ok(out)
}

/// A decoded file.
pub struct Decoded {
    /// The text (UTF-8; a file in another encoding is decoded as Latin-1 so
    /// that no byte is lost and lines keep their numbers).
    pub text: String,
    /// Hash of the raw bytes.
    pub content_hash: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Where the first invalid UTF-8 byte was (1-based line, column), if any.
    pub not_utf8_at: Option<(u32, u32)>,
}

/// Decode file bytes: UTF-8 (with or without BOM), else Latin-1.
pub fn decode(bytes: &[u8]) -> Decoded {
    let content_hash = blake3::hash(bytes).to_hex()[..32].to_string();
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(body) {
        Ok(s) => Decoded {
            text: s.to_string(),
            content_hash,
            bytes: bytes.len() as u64,
            not_utf8_at: None,
        },
        Err(e) => {
            let valid = &body[..e.valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() as u32 + 1;
            let col = valid.iter().rev().take_while(|b| **b != b'\n').count() as u32 + 1;
            Decoded {
                text: body.iter().map(|&b| b as char).collect(),
                content_hash,
                bytes: bytes.len() as u64,
                not_utf8_at: Some((line, col)),
            }
        }
    }
}

/// Relative path as stored (forward slashes), losslessly: a component
/// that is valid UTF-8 without a backslash is kept as it is; any other has
/// its backslashes doubled and each byte that is not valid UTF-8 written
/// `\xHH`. Different paths never give the same text (only escaped
/// components contain a backslash, and escapes decode unambiguously).
pub fn display_path(rel: &Path) -> String {
    let mut s = rel
        .components()
        .map(|c| escape_component(c.as_os_str()))
        .collect::<Vec<_>>()
        .join("/");
    // (harden) a directory's path (see [`LoadError::UnreadableDir`]) keeps
    // its trailing `/`.
    if rel.as_os_str().to_string_lossy().ends_with('/') && !s.is_empty() {
        s.push('/');
    }
    s
}

fn escape_component(c: &std::ffi::OsStr) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(c).to_vec();
    #[cfg(not(unix))]
    let bytes = c.to_string_lossy().into_owned().into_bytes();
    match std::str::from_utf8(&bytes) {
        Ok(s) if !s.contains('\\') => s.to_string(),
        _ => {
            let mut out = String::new();
            let mut rest: &[u8] = &bytes;
            while !rest.is_empty() {
                match std::str::from_utf8(rest) {
                    Ok(s) => {
                        out.push_str(&s.replace('\\', "\\\\"));
                        break;
                    }
                    Err(e) => {
                        let (good, bad) = rest.split_at(e.valid_up_to());
                        let good = std::str::from_utf8(good).unwrap_or_default();
                        out.push_str(&good.replace('\\', "\\\\"));
                        let n = e.error_len().unwrap_or(bad.len()).max(1);
                        for b in &bad[..n] {
                            out.push_str(&format!("\\x{b:02X}"));
                        }
                        rest = &bad[n..];
                    }
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn paths_are_stored_losslessly() {
        use std::os::unix::ffi::OsStrExt;
        let p = |b: &[u8]| display_path(Path::new(std::ffi::OsStr::from_bytes(b)));
        assert_eq!(p(b"src/a.cu"), "src/a.cu");
        assert_eq!(p(b"x\xff.cu"), "x\\xFF.cu");
        assert_ne!(p(b"x\xff.cu"), p(b"x\xfe.cu"));
        // A name that literally reads like an escape stays distinct.
        assert_eq!(p(b"x\\xFF.cu"), "x\\\\xFF.cu");
        assert_ne!(p(b"x\\xFF.cu"), p(b"x\xff.cu"));
    }

    #[test]
    fn decodes_utf8_bom_and_latin1() {
        let d = decode(b"\xEF\xBB\xBFint x;\n");
        assert_eq!(d.text, "int x;\n");
        assert!(d.not_utf8_at.is_none());
        let d = decode(b"int a;\n// caf\xE9\n");
        assert_eq!(d.not_utf8_at, Some((2, 7)));
        assert!(d.text.contains("café"));
    }

    #[test]
    fn discovers_sources_and_headers_with_excludes() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("src/gen")).unwrap();
        std::fs::create_dir_all(r.join(".cudalog")).unwrap();
        for f in [
            "a.cu",
            "src/b.cuh",
            "src/c.h",
            "src/gen/d.cu",
            "e.txt",
            ".cudalog/x.cu",
        ] {
            std::fs::write(r.join(f), "").unwrap();
        }
        let found = discover(r, &["src/gen/".into()]).unwrap();
        let names: Vec<String> = found.iter().map(|p| display_path(p)).collect();
        assert_eq!(names, vec!["a.cu", "src/b.cuh", "src/c.h"]);
        assert!(discover(&r.join("missing"), &[]).is_err());
    }

    fn outcome(l: &[Loaded]) -> Vec<(String, Result<usize, &'static str>)> {
        l.iter()
            .map(|x| {
                (
                    display_path(&x.rel),
                    x.content.as_ref().map(|b| b.len()).map_err(|e| e.code()),
                )
            })
            .collect()
    }

    #[test]
    fn every_path_is_read_or_has_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("sub")).unwrap();
        std::fs::write(r.join("a.cu"), "int a;").unwrap();
        std::fs::write(r.join("bad.cu"), "int b;").unwrap();
        std::fs::write(r.join("big.cu"), "x".repeat(100)).unwrap();
        std::fs::write(r.join("sub/c.cuh"), "int c;").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            // A linked source is indexed under the link's path.
            let outside = dir.path().join("sub/real.txt");
            std::fs::write(&outside, "int d;").unwrap();
            symlink(&outside, r.join("linked.cu")).unwrap();
            symlink(r.join("nowhere.cu"), r.join("dangling.cu")).unwrap();
            symlink(r, r.join("sub/loop")).unwrap();
        }
        // Reading `bad.cu` fails (as an unreadable file would, also for root).
        let read = |p: &Path| {
            if p.ends_with("bad.cu") {
                Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "denied",
                ))
            } else {
                std::fs::read(p)
            }
        };
        let got = outcome(&load_with(r, &[], 50, &read).unwrap());
        let mut want = vec![
            ("a.cu".to_string(), Ok(6)),
            ("bad.cu".to_string(), Err("unreadable")),
            ("big.cu".to_string(), Err("file-too-large")),
            ("sub/c.cuh".to_string(), Ok(6)),
        ];
        #[cfg(unix)]
        {
            want.push(("dangling.cu".to_string(), Err("symlink")));
            want.push(("linked.cu".to_string(), Ok(6)));
            want.push(("sub/loop/".to_string(), Err("symlink")));
        }
        want.sort();
        assert_eq!(got, want);
    }

    #[cfg(unix)]
    #[test]
    fn unreadable_directories_are_reported() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("locked")).unwrap();
        std::fs::write(r.join("locked/k.cu"), "int k;").unwrap();
        std::fs::write(r.join("a.cu"), "int a;").unwrap();
        std::fs::set_permissions(r.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
        let readable_anyway = std::fs::read_dir(r.join("locked")).is_ok();
        let got = outcome(&load(r, &[], 1 << 20).unwrap());
        std::fs::set_permissions(r.join("locked"), std::fs::Permissions::from_mode(0o755)).unwrap();
        if readable_anyway {
            // Running as root: permissions do not stop us.
            eprintln!("skipped: directory permissions are not enforced for this user");
            return;
        }
        assert_eq!(
            got,
            vec![
                ("a.cu".to_string(), Ok(6)),
                ("locked/".to_string(), Err("unreadable"))
            ]
        );
    }
}
