//! `cudalog check --format sarif` validated against the OASIS SARIF 2.1.0
//! JSON Schema (`tests/data/sarif-schema-2.1.0.json`, draft-07, with `format`
//! asserted), plus the fields GitHub code scanning reads.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::sync::OnceLock;

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json");
        let mut schema: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            schema["$schema"], "http://json-schema.org/draft-07/schema#",
            "the SARIF 2.1.0 schema is draft-07"
        );
        // The 2.1.0 schema's two `language` patterns carry a stray `]`, so
        // the schema fails jsonschema's check against the draft-07
        // meta-schema (`pattern` has `format: regex`); SARIF 2.1.0 Errata 01
        // corrects them to this. cudalog emits no `language`.
        for ptr in [
            "/definitions/run/properties/language/pattern",
            "/definitions/toolComponent/properties/language/pattern",
        ] {
            let p = schema.pointer_mut(ptr).unwrap();
            assert_eq!(p, "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$");
            *p = "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$".into();
        }
        jsonschema::draft7::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("the SARIF 2.1.0 schema compiles as draft-07")
    })
}

/// Every schema violation of `doc`, one line each, with its instance path.
fn schema_errors(doc: &Value) -> Vec<String> {
    validator()
        .iter_errors(doc)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!(
                "at `{}`: {e} (schema rule `{}`)",
                if at.is_empty() { "/" } else { &at },
                e.schema_path()
            )
        })
        .collect()
}

fn assert_schema_valid(doc: &Value, what: &str) {
    let errors = schema_errors(doc);
    assert!(
        errors.is_empty(),
        "{what}: the SARIF output violates the SARIF 2.1.0 schema ({} error(s)):\n  {}",
        errors.len(),
        errors.join("\n  ")
    );
}

/// `cudalog check DIR --format sarif` (store in a temp dir), expecting `code`.
fn check_sarif(dir: &Path, code: i32) -> Value {
    let db = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("cudalog")
        .unwrap()
        .arg("check")
        .arg(dir)
        .arg("--db")
        .arg(db.path().join("c.db"))
        .args(["--format", "sarif"])
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("the SARIF output is JSON")
}

fn text<'a>(v: &'a Value, what: &str) -> &'a str {
    let s = v["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}.text is missing"));
    assert!(!s.trim().is_empty(), "{what}.text is empty");
    s
}

/// Decode `%XX` escapes of a URI reference.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// What GitHub code scanning reads beyond the schema: driver name, rules with
/// id and descriptions, results tied to their rule by id and index, a level,
/// a message, a relative URI under `%SRCROOT%` and a start line and column.
fn assert_code_scanning_fields(doc: &Value) {
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "cudalog");
    if let Some(uri) = driver.get("informationUri") {
        assert!(uri.as_str().unwrap().starts_with("https://"));
    }
    let rules = driver["rules"].as_array().unwrap();
    // Built-in rules first, then the house rules that have results.
    assert!(rules.len() >= cudalog::check::RULES.len());
    for (r, info) in rules.iter().zip(cudalog::check::RULES) {
        assert_eq!(r["id"], info.id);
        text(&r["shortDescription"], "shortDescription");
        text(&r["fullDescription"], "fullDescription");
        text(&r["help"], "help");
        assert_eq!(r["defaultConfiguration"]["level"], info.severity.as_str());
    }
    for res in runs[0]["results"].as_array().unwrap() {
        let idx = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], res["ruleId"]);
        assert!(["error", "warning", "note"].contains(&res["level"].as_str().unwrap()));
        text(&res["message"], "message");
        let loc = &res["locations"][0]["physicalLocation"];
        let uri = loc["artifactLocation"]["uri"].as_str().unwrap();
        assert!(
            !uri.starts_with('/') && !uri.contains(':'),
            "uri `{uri}` is not relative"
        );
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(loc["region"]["startColumn"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn example_workspace_sarif_matches_the_schema() {
    let doc = check_sarif(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace-example"),
        1,
    );
    assert_schema_valid(&doc, "workspace-example");
    assert!(!doc["runs"][0]["results"].as_array().unwrap().is_empty());
    assert_code_scanning_fields(&doc);
}

#[test]
fn clean_kernel_sarif_matches_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ok.cu"),
        "__global__ void __launch_bounds__(256) k(float* d) { __syncthreads(); d[threadIdx.x] = 0; }\n",
    )
    .unwrap();
    let doc = check_sarif(dir.path(), 0);
    assert_schema_valid(&doc, "clean kernel");
    assert_eq!(doc["runs"][0]["results"], serde_json::json!([]));
    assert_code_scanning_fields(&doc);
}

/// A finding whose message quotes source text with a tab, `"`, `\` and a
/// non-ASCII character, in a file whose path needs percent-encoding in a URI.
#[test]
fn escaped_message_and_path_sarif_matches_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let sub = "src dir/kernél #1 50%.cu";
    std::fs::create_dir_all(dir.path().join("src dir")).unwrap();
    std::fs::write(
        dir.path().join(sub),
        concat!(
            "__global__ void k(float* d, int n) {\n",
            "  __shared__ float t[128];\n",
            "  if (threadIdx.x < n + alignof(decltype(\t\"\\\"é\\\\\"))) {\n",
            "    t[threadIdx.x] = d[threadIdx.x];\n",
            "    __syncthreads();\n",
            "  }\n",
            "}\n",
        ),
    )
    .unwrap();
    let doc = check_sarif(dir.path(), 1);
    assert_schema_valid(&doc, "escaping fixture");
    assert_code_scanning_fields(&doc);
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let r = results
        .iter()
        .find(|r| r["ruleId"] == "barrier-divergence")
        .expect("a barrier-divergence finding");
    let msg = r["message"]["text"].as_str().unwrap();
    assert!(
        msg.contains("alignof(decltype(\t\"\\\"é\\\\\"))"),
        "message lost characters: {msg}"
    );
    let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap();
    assert_eq!(percent_decode(uri), sub);
}

/// A way to break a valid SARIF document, and its name.
type Breakage = (&'static str, fn(&mut Value));

/// The validator really rejects broken SARIF (so the tests above can fail).
#[test]
fn schema_rejects_broken_sarif() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        concat!(
            "__global__ void k(float* d, int n) {\n",
            "  __shared__ float s[128];\n",
            "  if (threadIdx.x < n) {\n",
            "    s[threadIdx.x] = d[threadIdx.x];\n",
            "    __syncthreads();\n",
            "  }\n",
            "}\n",
        ),
    )
    .unwrap();
    let good = check_sarif(dir.path(), 1);
    assert_schema_valid(&good, "barrier bug");
    let breakages: [Breakage; 5] = [
        ("version 2.0", |d| d["version"] = "2.0".into()),
        ("no driver", |d| {
            d["runs"][0]["tool"]
                .as_object_mut()
                .unwrap()
                .remove("driver");
        }),
        ("line 0", |d| {
            d["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
                0.into()
        }),
        ("unencoded space in uri", |d| {
            d["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] =
                "a b.cu".into()
        }),
        ("unknown level", |d| {
            d["runs"][0]["results"][0]["level"] = "fatal".into()
        }),
    ];
    for (what, brk) in breakages {
        let mut bad = good.clone();
        brk(&mut bad);
        let errors = schema_errors(&bad);
        assert!(!errors.is_empty(), "{what}: accepted by the schema");
        eprintln!("{what}: rejected: {}", errors.join("; "));
    }
}
