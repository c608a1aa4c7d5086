//! The modules of idem-cli stand in layers as idem-core's and idem-http's do (see `layers`,
//! whose checker this uses), and code reads downward only: the ground (exit codes, failures,
//! what no message shows); the command line read into a plain description, without a store
//! or output; a store connected from that description; the commands, which say what they
//! found to a `Printer`; and on top the output, which implements it. Each `crate::` path in
//! idem-cli's `src/` (outside comments and unit tests) is checked against the table below.

use super::layers::{code_of, violations, violations_in, Layering};

const IDEM_CLI: Layering = Layering {
    dir: "idem-cli",
    layers: &[
        // The ground: exit codes, failures, and what no message shows.
        &["exit", "redact"],
        &["secrets"],
        &["visible"],
        &["failure"],
        // The command line, read into a plain description: no store, no output.
        &["attribute_names", "key_args"],
        &["args", "url"],
        &["dynamodb_url", "readme_commands"],
        // A store, connected from that description.
        &["misnamed", "partition"],
        &["connect"],
        // The commands, and what they read.
        &["keyring", "listing", "outcome"],
        &["commands"],
        // The output: how what the commands say is printed.
        &["output"],
        // The binary, which calls the root's `main`.
        &["main"],
    ],
    root_items: &[],
    mutual: &[],
};

#[test]
fn every_module_of_idem_cli_uses_only_the_layers_below_it() {
    let found = violations_in(&IDEM_CLI);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

// The table itself, on imports planted in sample code.

#[test]
fn a_command_that_names_the_output_is_refused() {
    let code = code_of("use crate::output::Output;\n");
    let found = violations(&IDEM_CLI, "commands/get.rs", "commands", &code);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(format!("{found:?}").contains("uses `output`"), "{found:?}");
}

#[test]
fn the_description_names_no_store_command_or_output() {
    for target in ["connect", "listing", "commands", "output"] {
        let code = code_of(&format!("fn f() {{ let _ = crate::{target}::X; }}"));
        let found = violations(&IDEM_CLI, "args.rs", "args", &code);
        assert_eq!(found.len(), 1, "{target}: {found:?}");
    }
}

#[test]
fn the_output_names_what_the_commands_say_and_a_failure_names_no_output() {
    let code = code_of("use crate::commands::printer::Printer;\nuse crate::listing::Entry;\n");
    assert_eq!(
        violations(&IDEM_CLI, "output/mod.rs", "output", &code),
        vec![]
    );
    let code = code_of("use crate::output::Output;\n");
    assert_eq!(
        violations(&IDEM_CLI, "failure.rs", "failure", &code).len(),
        1
    );
}
