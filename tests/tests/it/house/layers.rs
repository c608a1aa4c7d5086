//! The modules of idem-core and idem-http stand in layers, and code reads downward only: a
//! module names the modules of lower layers, never one of its own layer or above (but for a
//! type and its builder, which name each other). Each `crate::` path in a crate's `src/`
//! (outside comments and unit tests) is checked against its table below, and a path through
//! a root re-export (`crate::Error`) is refused too, since it hides which module it reaches.

use std::collections::BTreeSet;
use std::path::Path;

use super::sources::{rust_files, workspace};

/// A crate's layering.
pub(crate) struct Layering {
    /// The crate's folder in the workspace.
    pub(crate) dir: &'static str,
    /// The layers, from the ground up. A module may use the modules of the layers below its own.
    pub(crate) layers: &'static [&'static [&'static str]],
    /// Items of the crate root itself (not re-exports), which every module may use.
    pub(crate) root_items: &'static [&'static str],
    /// Modules of one layer that may name each other: a type and its builder.
    pub(crate) mutual: &'static [(&'static str, &'static str)],
}

const IDEM_CORE: Layering = Layering {
    dir: "idem-core",
    layers: &[
        &["error", "json"],
        &["fingerprint", "key"],
        &["store"],
        &["clock"],
        &["seal", "lease", "quota", "replay_cache", "telemetry"],
        &["steps"],
        &["call"],
        &["engine"],
        &["operator"],
        &["handle"],
        &["global"],
        &["__private01"],
    ],
    root_items: &["TARGET"],
    mutual: &[],
};

const IDEM_HTTP: Layering = Layering {
    dir: "idem-http",
    layers: &[
        &["body", "telemetry"],
        &["request"],
        &["response"],
        &["grpc", "config"],
        &["answer"],
        &["asked", "detached"],
        &["contract", "openapi"],
        &["service"],
        &["builder", "layer"],
        &["actix", "poem", "salvo"],
    ],
    root_items: &["TARGET"],
    mutual: &[("builder", "layer")],
};

impl Layering {
    fn layer_of(&self, module: &str) -> Option<usize> {
        self.layers.iter().position(|layer| layer.contains(&module))
    }
}

/// One `crate::` path that breaks the layering: where it is, and why.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Violation {
    file: String,
    line: usize,
    reason: String,
}

/// The module a source file belongs to: its first folder, or its own name at the top.
fn module_of(relative: &Path) -> String {
    let first = relative
        .components()
        .next()
        .expect("a path under src")
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// `source` without comments, string literals' contents and `#[cfg(test)]` modules, with
/// line breaks kept so that positions still tell lines.
pub(crate) fn code_of(source: &str) -> String {
    without_test_modules(&without_comments_and_strings(source))
}

/// `code` with each `#[cfg(test)] mod NAME { ... }` blanked, but for its line breaks.
fn without_test_modules(code: &str) -> String {
    let mut kept = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let Some(open) = after.strip_prefix("mod ").and_then(|module| {
            module
                .find('{')
                .filter(|brace| !module[..*brace].contains(';'))
        }) else {
            kept.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        };
        kept.push_str(&rest[..at]);
        let body_start = rest.len() - after.len() + "mod ".len() + open;
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[body_start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body_start + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        kept.extend(rest[at..end].matches('\n').map(|_| '\n'));
        rest = &rest[end..];
    }
    kept.push_str(rest);
    kept
}

fn without_comments_and_strings(source: &str) -> String {
    let mut code = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        code.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut previous = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        code.push('\n');
                    }
                    if previous == '*' && c == '/' {
                        break;
                    }
                    previous = c;
                }
            }
            '"' => {
                code.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '\n' {
                        code.push('\n');
                    }
                    if c == '"' && !escaped {
                        break;
                    }
                    escaped = c == '\\' && !escaped;
                }
                code.push('"');
            }
            _ => code.push(c),
        }
    }
    code
}

/// The first segment of each path that `crate::` starts in `code`, with its line: one for
/// `crate::a::B`, one per entry for `crate::{a::B, c}`.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut rest = code;
    let mut offset = 0;
    while let Some(at) = rest.find("crate::") {
        let start = offset + at;
        let preceded_by_word = code[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        let after = &code[start + "crate::".len()..];
        let line = code[..start].matches('\n').count() + 1;
        if !preceded_by_word {
            if let Some(group) = after.strip_prefix('{') {
                for entry in top_level_entries(group) {
                    found.push((line, first_segment(entry.trim())));
                }
            } else {
                found.push((line, first_segment(after)));
            }
        }
        offset = start + "crate::".len();
        rest = &code[offset..];
    }
    found
}

/// The entries of a use group, `group` being the text after its `{`.
fn top_level_entries(group: &str) -> Vec<&str> {
    let mut entries = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                entries.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                entries.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.retain(|entry| !entry.trim().is_empty());
    entries
}

fn first_segment(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// What is wrong with `file` (in `module` of `crate_`) using the paths of `code`.
pub(crate) fn violations(
    crate_: &Layering,
    file: &str,
    module: &str,
    code: &str,
) -> Vec<Violation> {
    let Some(own_layer) = crate_.layer_of(module) else {
        return vec![Violation {
            file: file.to_owned(),
            line: 1,
            reason: format!(
                "module `{module}` is in no layer: add it to its layering in this file"
            ),
        }];
    };
    let mut found = Vec::new();
    for (line, target) in crate_paths(code) {
        let mutual = crate_.mutual.iter().any(|&(a, b)| {
            (a, b) == (module, target.as_str()) || (b, a) == (module, target.as_str())
        });
        if target == module
            || mutual
            || crate_.root_items.contains(&target.as_str())
            || target.is_empty()
        {
            continue;
        }
        let reason = match crate_.layer_of(&target) {
            None => format!(
                "`crate::{target}` goes through the crate root: name the module that defines it"
            ),
            Some(layer) if layer >= own_layer => format!(
                "`{module}` (layer {own_layer}) uses `{target}` (layer {layer}): a module uses \
                 only the layers below its own"
            ),
            Some(_) => continue,
        };
        found.push(Violation {
            file: file.to_owned(),
            line,
            reason,
        });
    }
    found
}

/// Every violation of `crate_`'s layering in its sources.
pub(crate) fn violations_in(crate_: &Layering) -> Vec<String> {
    let src = workspace().join(crate_.dir).join("src");
    let files = rust_files(&src);
    let mut all = Vec::new();
    let mut modules = BTreeSet::new();
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src");
        // The root declares the modules; a `tests.rs` is a module's unit tests.
        if relative == Path::new("lib.rs") || relative.ends_with("tests.rs") {
            continue;
        }
        let module = module_of(relative);
        modules.insert(module.clone());
        let source = std::fs::read_to_string(&path).expect("a readable source file");
        all.extend(violations(
            crate_,
            &relative.display().to_string(),
            &module,
            &code_of(&source),
        ));
    }
    assert!(
        modules.len() > 10,
        "the walk found only {modules:?}: is src/ where it was?"
    );
    all.sort();
    all.iter()
        .map(|v| format!("{}/src/{}:{}: {}", crate_.dir, v.file, v.line, v.reason))
        .collect()
}

#[test]
fn every_module_of_idem_core_uses_only_the_layers_below_it() {
    let found = violations_in(&IDEM_CORE);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_module_of_idem_http_uses_only_the_layers_below_it() {
    let found = violations_in(&IDEM_HTTP);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

// The checker itself, on imports planted in sample code.

#[test]
fn an_import_from_a_layer_above_is_refused() {
    let code = code_of("use crate::handle::Idempotency;\n");
    let found = violations(&IDEM_CORE, "store/record.rs", "store", &code);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].reason.contains("uses `handle`"), "{found:?}");
}

#[test]
fn an_import_from_the_same_layer_is_refused() {
    let found = violations(
        &IDEM_CORE,
        "lease/mod.rs",
        "lease",
        &code_of("use crate::quota::Quota;"),
    );
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn an_import_through_the_root_is_refused_even_in_a_group() {
    let code = code_of("use crate::{\n    key::Key,\n    Idempotency,\n};\n");
    let found = violations(&IDEM_CORE, "store/record.rs", "store", &code);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].line, 1);
    assert!(found[0].reason.contains("crate root"), "{found:?}");
}

#[test]
fn a_path_in_an_expression_counts_like_an_import() {
    let code = code_of("fn f() { let _ = crate::engine::run(); }");
    assert_eq!(
        violations(&IDEM_CORE, "call/mod.rs", "call", &code).len(),
        1
    );
}

#[test]
fn imports_from_below_comments_strings_and_unit_tests_are_allowed() {
    let code = code_of(concat!(
        "use crate::{error::Error, key::Key, TARGET};\n",
        "/// See [`Idempotency`](crate::Idempotency).\n",
        "/* crate::handle */\n",
        "const S: &str = \"crate::engine\";\n",
        "#[cfg(test)]\nmod tests {\n    use crate::handle::Idempotency;\n}\n",
    ));
    assert_eq!(
        violations(&IDEM_CORE, "store/record.rs", "store", &code),
        vec![]
    );
}

#[test]
fn code_after_a_unit_test_module_is_still_checked() {
    let code = code_of(concat!(
        "#[cfg(test)]\nmod tests {\n    fn f() { if true { let _ = 1; } }\n}\n",
        "use crate::handle::Idempotency;\n",
    ));
    let found = violations(&IDEM_CORE, "store/time.rs", "store", &code);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].line, 5);
}

#[test]
fn a_type_and_its_builder_may_name_each_other_and_nothing_else_may() {
    let code = code_of("use crate::layer::IdempotencyLayer;");
    assert_eq!(
        violations(&IDEM_HTTP, "builder.rs", "builder", &code),
        vec![]
    );
    let code = code_of("use crate::builder::IdempotencyLayerBuilder;");
    assert_eq!(violations(&IDEM_HTTP, "layer.rs", "layer", &code), vec![]);
    let code = code_of("use crate::service::IdempotencyService;");
    assert_eq!(
        violations(&IDEM_HTTP, "request/scope.rs", "request", &code).len(),
        1
    );
}

#[test]
fn a_module_outside_the_table_is_named() {
    let found = violations(&IDEM_CORE, "newcomer.rs", "newcomer", "");
    assert!(found[0].reason.contains("in no layer"), "{found:?}");
}
