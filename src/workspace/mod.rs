//! Finding and reading a workspace's source files.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Extensions of files whose functions are indexed.
pub const SOURCE_EXTENSIONS: &[&str] = &["cu", "cuh"];
/// Extensions of headers loaded so that local `#include`s resolve; their
/// functions are indexed only when a source file includes them.
pub const HEADER_EXTENSIONS: &[&str] = &["h", "hpp", "hh", "hxx", "inl", "cuh"];

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
    rel.components()
        .map(|c| escape_component(c.as_os_str()))
        .collect::<Vec<_>>()
        .join("/")
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
}
