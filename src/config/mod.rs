//! Workspace configuration (`cudalog.toml`) and command-line overrides.

use anyhow::{Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Name of the configuration file looked up at the workspace root.
pub const CONFIG_FILE: &str = "cudalog.toml";

/// `[preprocessor]`: macros and include directories.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PreprocessorConfig {
    /// Macros to define, `NAME = "value"` (an empty string defines the name
    /// with no value).
    #[serde(default)]
    pub defines: BTreeMap<String, String>,
    /// Names known to be undefined in the build (their `#ifdef` is decidable).
    #[serde(default)]
    pub undefs: Vec<String>,
    /// Extra include directories, relative to the workspace root.
    #[serde(default)]
    pub include_dirs: Vec<PathBuf>,
}

/// `[launch]`: default launch dimensions when no launch site decides them.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LaunchConfig {
    /// Default block dimensions.
    #[serde(default = "default_block")]
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
        }
    }
}

/// `[index]`: which files to read.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Gitignore-style patterns of paths to skip, relative to the root.
    #[serde(default)]
    pub exclude: Vec<String>,
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
    /// Load `root/cudalog.toml` if present, else defaults.
    pub fn load(root: &Path) -> Result<Config> {
        let path = root.join(CONFIG_FILE);
        if !path.exists() {
            return Ok(Config::default());
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Config::parse(&text).with_context(|| format!("invalid {}", path.display()))
    }

    /// Parse configuration text.
    pub fn parse(text: &str) -> Result<Config> {
        Ok(toml::from_str(text)?)
    }

    /// Add `-D NAME[=VALUE]` flags from the command line.
    pub fn add_defines(&mut self, defines: &[String]) {
        for d in defines {
            let (name, value) = d.split_once('=').unwrap_or((d.as_str(), "1"));
            self.preprocessor
                .defines
                .insert(name.trim().to_string(), value.to_string());
        }
    }
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
        let mut c = Config::default();
        c.add_defines(&["A".into(), "B=7".into()]);
        assert_eq!(c.preprocessor.defines["A"], "1");
        assert_eq!(c.preprocessor.defines["B"], "7");
    }
}
