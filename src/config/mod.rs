//! Workspace configuration (`cudalog.toml`) and command-line overrides.

use crate::frontend::preproc::MacroTable;
use anyhow::{Context, Result};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Name of the configuration file looked up at the workspace root.
pub const CONFIG_FILE: &str = "cudalog.toml";

/// `[preprocessor]`: macros and include directories.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(try_from = "RawPreprocessor")]
pub struct PreprocessorConfig {
    /// Macros to define, `NAME = "value"` (an empty string defines the name
    /// with no value).
    pub defines: BTreeMap<String, String>,
    /// Names known to be undefined in the build (their `#ifdef` is decidable).
    pub undefs: Vec<String>,
    /// Names whose definedness cudalog must not decide (both branches of
    /// their `#ifdef` are analysed), e.g. macros the build system sets in
    /// some configurations only.
    pub unknown: Vec<String>,
    /// Whether a name that no file of the workspace, no `-D` and no setting
    /// defines is undefined (as the compiler sees it: `#ifdef` code under it
    /// is dead). `false` keeps every such name undecidable.
    pub assume_undefined: bool,
    /// Extra include directories, relative to the workspace root.
    pub include_dirs: Vec<PathBuf>,
}

impl Default for PreprocessorConfig {
    fn default() -> Self {
        PreprocessorConfig {
            defines: BTreeMap::new(),
            undefs: Vec::new(),
            unknown: Vec::new(),
            assume_undefined: true,
            include_dirs: Vec::new(),
        }
    }
}

/// `[preprocessor]` as written, before the checks across its keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPreprocessor {
    #[serde(default, deserialize_with = "macro_defines")]
    defines: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "macro_names")]
    undefs: Vec<String>,
    #[serde(default, deserialize_with = "macro_names")]
    unknown: Vec<String>,
    #[serde(default = "yes")]
    assume_undefined: bool,
    #[serde(default, deserialize_with = "relative_dirs")]
    include_dirs: Vec<PathBuf>,
}

fn yes() -> bool {
    true
}

impl TryFrom<RawPreprocessor> for PreprocessorConfig {
    type Error = String;

    fn try_from(r: RawPreprocessor) -> Result<Self, String> {
        let lists = [
            ("defines", r.defines.keys().cloned().collect::<Vec<_>>()),
            ("undefs", r.undefs.clone()),
            ("unknown", r.unknown.clone()),
        ];
        for (i, (a, names_a)) in lists.iter().enumerate() {
            for (b, names_b) in &lists[i + 1..] {
                if let Some(n) = names_a.iter().find(|n| names_b.contains(n)) {
                    return Err(format!(
                        "macro `{n}` is in both `{a}` and `{b}`: it can be only one of \
                         defined, undefined or unknown"
                    ));
                }
            }
        }
        Ok(PreprocessorConfig {
            defines: r.defines,
            undefs: r.undefs,
            unknown: r.unknown,
            assume_undefined: r.assume_undefined,
            include_dirs: r.include_dirs,
        })
    }
}

/// Whether `name` is a C identifier (a macro name that code can test).
pub fn is_macro_name(name: &str) -> bool {
    let mut cs = name.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_name<E: serde::de::Error>(n: &str) -> Result<(), E> {
    if is_macro_name(n) {
        Ok(())
    } else {
        Err(E::custom(format!(
            "`{n}` is not a macro name (letters, digits and `_`, not starting with a digit)"
        )))
    }
}

fn macro_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for n in &v {
        check_name::<D::Error>(n)?;
    }
    Ok(v)
}

fn macro_defines<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let m = BTreeMap::<String, String>::deserialize(d)?;
    for n in m.keys() {
        check_name::<D::Error>(n)?;
    }
    Ok(m)
}

/// Include directories must be relative paths inside the workspace:
/// includes are resolved among the workspace's files, so any other path
/// could never match one.
fn relative_dirs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
    let v = Vec::<PathBuf>::deserialize(d)?;
    for p in &v {
        if let Err(why) = inside_root(p) {
            return Err(serde::de::Error::custom(format!(
                "include directory `{}` {why}: includes are resolved among the \
                 workspace's files",
                p.display()
            )));
        }
    }
    Ok(v)
}

fn inside_root(p: &Path) -> Result<(), &'static str> {
    let mut depth = 0i32;
    for c in p.components() {
        match c {
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return Err("leaves the workspace root");
                }
            }
            _ => return Err("is not relative to the workspace root"),
        }
    }
    Ok(())
}

/// Largest `x`, `y`, `z` of a CUDA thread block, and of their product.
pub const MAX_BLOCK_DIMS: [u32; 3] = [1024, 1024, 64];
/// Most threads in one block.
pub const MAX_BLOCK_THREADS: u64 = 1024;

/// `[launch]`: default launch dimensions when no launch site decides them.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LaunchConfig {
    /// Default block dimensions: each at least 1 and at most CUDA's limits
    /// (1024, 1024, 64), at most 1024 threads in all.
    #[serde(default = "default_block", deserialize_with = "block_dims")]
    pub block: [u32; 3],
    /// Default grid dimensions (unknown when absent); the race checks use
    /// them to decide whether threads of different blocks can collide.
    #[serde(default)]
    pub grid: Option<[u32; 3]>,
    /// Assume the lanes of a warp run in lock-step (pre-Volta warp-synchronous
    /// code): accesses of one warp in different statements do not race.
    /// Race messages state the assumption.
    #[serde(default)]
    pub warp_lockstep: bool,
}

fn default_block() -> [u32; 3] {
    [256, 1, 1]
}

fn block_dims<'de, D: Deserializer<'de>>(d: D) -> Result<[u32; 3], D::Error> {
    let b = <[u32; 3]>::deserialize(d)?;
    check_block(b).map_err(serde::de::Error::custom)?;
    Ok(b)
}

/// Check block dimensions against CUDA's limits.
pub fn check_block(b: [u32; 3]) -> Result<(), String> {
    for (i, (v, max)) in b.iter().zip(MAX_BLOCK_DIMS).enumerate() {
        if *v < 1 || *v > max {
            return Err(format!(
                "block dimension {} is {v}, outside 1..={max}",
                ["x", "y", "z"][i]
            ));
        }
    }
    let threads: u64 = b.iter().map(|v| u64::from(*v)).product();
    if threads > MAX_BLOCK_THREADS {
        return Err(format!(
            "a block of {}x{}x{} has {threads} threads, more than {MAX_BLOCK_THREADS}",
            b[0], b[1], b[2]
        ));
    }
    Ok(())
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            block: default_block(),
            grid: None,
            warp_lockstep: false,
        }
    }
}

/// `[cost]`: the cost model's hardware parameters.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CostConfig {
    /// Threads per warp.
    #[serde(default = "d32")]
    pub warp: u32,
    /// Global-memory sector size in bytes.
    #[serde(default = "d32")]
    pub sector_bytes: u32,
    /// Global-memory cache line size in bytes.
    #[serde(default = "d128")]
    pub line_bytes: u32,
    /// Number of shared-memory banks.
    #[serde(default = "d32")]
    pub banks: u32,
    /// Width of one bank in bytes.
    #[serde(default = "d4")]
    pub bank_bytes: u32,
    /// (issue 8) Divergent branches on data-dependent conditions whose
    /// divergent part is estimated at fewer operations than this are not
    /// reported (0 reports every one).
    #[serde(default = "default_divergent_min_ops")]
    pub divergent_min_ops: u32,
    /// (issue 8) Uncoalesced accesses carrying at most this share (percent)
    /// of their kernel's estimated global traffic are notes (0: never).
    #[serde(default = "default_small_access_percent")]
    pub small_access_percent: u32,
}

fn default_small_access_percent() -> u32 {
    crate::facts::cost::DEFAULT_SMALL_ACCESS_PERCENT
}

fn default_divergent_min_ops() -> u32 {
    crate::facts::cost::DEFAULT_DIVERGENT_MIN_OPS
}

fn d32() -> u32 {
    32
}
fn d128() -> u32 {
    128
}
fn d4() -> u32 {
    4
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig {
            warp: 32,
            sector_bytes: 32,
            line_bytes: 128,
            banks: 32,
            bank_bytes: 4,
            divergent_min_ops: default_divergent_min_ops(),
            small_access_percent: default_small_access_percent(),
        }
    }
}

/// Default of `[index] max_file_bytes`.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 << 20;

/// `[index]`: which files to read.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Gitignore-style patterns of paths to skip, relative to the root.
    #[serde(default, deserialize_with = "exclude_patterns")]
    pub exclude: Vec<String>,
    /// Files larger than this are not read (a `file-too-large` diagnostic
    /// says so): parsing runs at a few MB/s and needs tens of bytes of
    /// memory per source byte.
    #[serde(default = "default_max_file_bytes", deserialize_with = "positive")]
    pub max_file_bytes: u64,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            exclude: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

fn default_max_file_bytes() -> u64 {
    DEFAULT_MAX_FILE_BYTES
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = u64::deserialize(d)?;
    if v == 0 {
        return Err(serde::de::Error::custom("must be at least 1"));
    }
    Ok(v)
}

fn exclude_patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for pat in &v {
        let mut b = ignore::overrides::OverrideBuilder::new("/");
        if let Err(e) = b.add(&format!("!{pat}")) {
            return Err(serde::de::Error::custom(format!(
                "invalid exclude pattern `{pat}`: {e}"
            )));
        }
    }
    Ok(v)
}

/// `[rules]`: house rules (see docs/rules.md).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RulesConfig {
    /// Rule files or folders of `*.dl`, relative to the root, evaluated
    /// besides the shipped rules and `.cudalog/rules/*.dl`.
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// Lint names whose findings are not reported (shipped or workspace).
    #[serde(default)]
    pub disable: Vec<String>,
    /// Shipped lints that are off unless named here (see
    /// [`crate::rules::shipped::OPT_IN`]).
    #[serde(default)]
    pub enable: Vec<String>,
}

/// The whole configuration.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Preprocessor settings.
    #[serde(default)]
    pub preprocessor: PreprocessorConfig,
    /// Launch defaults.
    #[serde(default)]
    pub launch: LaunchConfig,
    /// Cost model.
    #[serde(default)]
    pub cost: CostConfig,
    /// File selection.
    #[serde(default)]
    pub index: IndexConfig,
    /// House rules.
    #[serde(default)]
    pub rules: RulesConfig,
}

impl Config {
    /// Load `root/cudalog.toml` if present, else defaults. Include
    /// directories must exist under `root`.
    pub fn load(root: &Path) -> Result<Config> {
        let path = root.join(CONFIG_FILE);
        if !path.exists() {
            return Ok(Config::default());
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let config = Config::parse(&text).with_context(|| format!("invalid {}", path.display()))?;
        config
            .check_include_dirs(root, &text)
            .with_context(|| format!("invalid {}", path.display()))?;
        Ok(config)
    }

    /// Parse configuration text.
    pub fn parse(text: &str) -> Result<Config> {
        Ok(toml::from_str(text)?)
    }

    /// Every include directory is a directory under `root`; the error names
    /// the line and column of the entry in `text`.
    fn check_include_dirs(&self, root: &Path, text: &str) -> Result<()> {
        #[derive(Deserialize, Default)]
        struct Top {
            #[serde(default)]
            preprocessor: Pre,
        }
        #[derive(Deserialize, Default)]
        struct Pre {
            #[serde(default)]
            include_dirs: Vec<toml::Spanned<PathBuf>>,
        }
        let spans: Top = toml::from_str(text).unwrap_or_default();
        for dir in &spans.preprocessor.include_dirs {
            if !root.join(dir.get_ref()).is_dir() {
                let (line, col) = line_col(text, dir.span().start);
                anyhow::bail!(
                    "line {line}, column {col}: include directory `{}` is not a directory \
                     under {}",
                    dir.get_ref().display(),
                    root.display()
                );
            }
        }
        Ok(())
    }

    /// Add `-D NAME[=VALUE]` flags from the command line.
    pub fn add_defines(&mut self, defines: &[String]) -> Result<()> {
        for d in defines {
            let (name, value) = d.split_once('=').unwrap_or((d.as_str(), "1"));
            let name = name.trim();
            if !is_macro_name(name) {
                anyhow::bail!("-D {d}: `{name}` is not a macro name");
            }
            // The command line wins over the configuration file.
            self.preprocessor.undefs.retain(|n| n != name);
            self.preprocessor.unknown.retain(|n| n != name);
            self.preprocessor
                .defines
                .insert(name.to_string(), value.to_string());
        }
        Ok(())
    }

    /// The preprocessor state every file starts from: nvcc's predefined
    /// macros, then `defines`, `undefs` and `unknown`, closed unless
    /// `assume_undefined = false`.
    pub fn initial_macros(&self) -> MacroTable {
        let p = &self.preprocessor;
        let mut macros = MacroTable::predefined();
        macros.set_closed(p.assume_undefined);
        for (k, v) in &p.defines {
            macros.define(k, None, v);
        }
        for k in &p.undefs {
            macros.undef(k);
        }
        for k in &p.unknown {
            macros.mark_unknown(k);
        }
        macros
    }
}

/// 1-based line and column of byte `offset` of `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_config() {
        let c = Config::parse(
            "[preprocessor]\ndefines = { USE_DOUBLE = \"\", BLOCK = \"128\" }\nundefs = [\"DEBUG\"]\n\
             [launch]\nblock = [16, 16, 1]\n[cost]\nwarp = 32\n",
        )
        .unwrap();
        assert_eq!(c.preprocessor.defines["BLOCK"], "128");
        assert_eq!(c.launch.block, [16, 16, 1]);
        assert_eq!(c.cost.sector_bytes, 32);
    }

    #[test]
    fn rejects_unknown_keys_with_location() {
        let err = Config::parse("[launch]\nblok = [1,1,1]\n").unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("blok"), "{msg}");
        assert!(msg.contains("line 2"), "{msg}");
    }

    #[test]
    fn command_line_defines() {
        let mut c = Config::parse("[preprocessor]\nundefs = [\"A\"]\n").unwrap();
        c.add_defines(&["A".into(), "B=7".into()]).unwrap();
        assert_eq!(c.preprocessor.defines["A"], "1");
        assert_eq!(c.preprocessor.defines["B"], "7");
        assert!(c.preprocessor.undefs.is_empty());
        let err = c.add_defines(&["A B=1".into()]).unwrap_err();
        assert!(format!("{err}").contains("not a macro name"));
    }

    fn parse_err(text: &str) -> String {
        format!("{:#}", Config::parse(text).unwrap_err())
    }

    #[test]
    fn launch_block_is_validated_with_a_location() {
        assert_eq!(
            Config::parse("[launch]\nblock = [32, 32, 1]\n")
                .unwrap()
                .launch
                .block,
            [32, 32, 1]
        );
        for (block, why) in [
            ("[0, 1, 1]", "dimension x is 0"),
            ("[2048, 1, 1]", "dimension x is 2048"),
            ("[1, 1, 65]", "dimension z is 65"),
            ("[64, 32, 1]", "2048 threads"),
        ] {
            let msg = parse_err(&format!("# defaults\n[launch]\nblock = {block}\n"));
            assert!(msg.contains(why), "{msg}");
            assert!(msg.contains("line 3, column 9"), "{msg}");
        }
        let msg = parse_err("[launch]\nblock = [-1, 1, 1]\n");
        assert!(msg.contains("line 2"), "{msg}");
    }

    #[test]
    fn every_parsed_key_is_checked() {
        // Names code can test.
        let msg = parse_err("[preprocessor]\nundefs = [\"OK\", \"NOT OK\"]\n");
        assert!(
            msg.contains("not a macro name") && msg.contains("line 2"),
            "{msg}"
        );
        let msg = parse_err("[preprocessor]\ndefines = { \"1X\" = \"\" }\n");
        assert!(msg.contains("not a macro name"), "{msg}");
        // A name is defined, undefined or unknown, not two of them.
        let msg = parse_err("[preprocessor]\ndefines = { A = \"1\" }\nunknown = [\"A\"]\n");
        assert!(msg.contains("`A` is in both"), "{msg}");
        // Include directories that could never match a workspace file.
        let msg = parse_err("[preprocessor]\ninclude_dirs = [\"/usr/include\"]\n");
        assert!(
            msg.contains("not relative") && msg.contains("line 2"),
            "{msg}"
        );
        let msg = parse_err("[preprocessor]\ninclude_dirs = [\"a/../../b\"]\n");
        assert!(msg.contains("leaves the workspace"), "{msg}");
        // Exclude patterns and limits.
        let msg = parse_err("[index]\nexclude = [\"a/[\"]\n");
        assert!(
            msg.contains("invalid exclude pattern") && msg.contains("line 2"),
            "{msg}"
        );
        let msg = parse_err("[index]\nmax_file_bytes = 0\n");
        assert!(msg.contains("at least 1"), "{msg}");
        // Unknown keys anywhere.
        let msg = parse_err("[preprocessor]\nundef = [\"A\"]\n");
        assert!(msg.contains("undef"), "{msg}");
    }

    #[test]
    fn include_dirs_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inc")).unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[preprocessor]\ninclude_dirs = [\"inc\", \"missing\"]\n",
        )
        .unwrap();
        let msg = format!("{:#}", Config::load(dir.path()).unwrap_err());
        assert!(
            msg.contains("line 2, column 24") && msg.contains("`missing`"),
            "{msg}"
        );
    }

    #[test]
    fn preprocessor_settings_reach_the_macro_table() {
        let c = Config::parse(
            "[preprocessor]\ndefines = { A = \"\" }\nundefs = [\"B\"]\nunknown = [\"C\"]\n",
        )
        .unwrap();
        let m = c.initial_macros();
        assert_eq!(m.is_defined("A"), Some(true));
        assert_eq!(m.is_defined("B"), Some(false));
        assert_eq!(m.is_defined("C"), None);
        assert_eq!(m.is_defined("D"), Some(false));
        let open = Config::parse("[preprocessor]\nassume_undefined = false\n").unwrap();
        assert_eq!(open.initial_macros().is_defined("D"), None);
        assert_eq!(
            Config::default().index.max_file_bytes,
            DEFAULT_MAX_FILE_BYTES
        );
    }
}
