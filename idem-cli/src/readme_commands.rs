//! Every `$ idem ...` line of the crate's README parses as the command line does: an option
//! renamed or dropped fails here, not in an operator's terminal.

use clap::Parser;

use crate::args::Cli;

/// The README's command lines that run `idem`: `$ ` lines of its console blocks, with their
/// `\` continuations joined.
fn idem_lines(readme: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_console = false;
    let mut pending: Option<String> = None;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        let text = match pending.take() {
            Some(mut joined) => {
                joined.push(' ');
                joined.push_str(line.trim());
                joined
            }
            None => match line.strip_prefix("$ ") {
                Some(command) => command.to_owned(),
                None => continue,
            },
        };
        match text.strip_suffix('\\') {
            Some(open) => pending = Some(open.trim_end().to_owned()),
            None => lines.push(text),
        }
    }
    lines
}

/// The words of `command` as a shell would pass them to `idem`, or `None` when it does not run
/// `idem`: leading `NAME=value` assignments dropped, a command substitution taken as one word,
/// and everything from the first unquoted `|` or `>` on cut off.
fn idem_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                let mut depth = 0;
                while let Some(c) = chars.next() {
                    match c {
                        '$' if chars.peek() == Some(&'(') => depth += 1,
                        ')' if depth > 0 => depth -= 1,
                        '"' if depth == 0 => break,
                        _ => {}
                    }
                    word.push(c);
                }
            }
            '|' | '>' => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    let start = words.iter().position(|word| !is_assignment(word))?;
    (words[start] == "idem").then(|| words.split_off(start))
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

#[test]
fn every_idem_line_of_the_readme_parses() {
    let readme = include_str!("../README.md");
    let commands: Vec<Vec<String>> = idem_lines(readme)
        .iter()
        .filter_map(|line| idem_words(line))
        .collect();
    assert!(commands.len() >= 10, "the README's commands: {commands:?}");
    for words in &commands {
        if let Err(error) = Cli::try_parse_from(words) {
            panic!("`{}` does not parse: {error}", words.join(" "));
        }
    }
}

#[test]
fn a_line_reads_as_the_shell_reads_it() {
    let words = |line: &str| idem_words(line).unwrap_or_default();
    assert_eq!(
        words(r#"IDEM_KEYRING="$(cat /k)" idem get 'a|b' --raw | jq ."#),
        ["idem", "get", "a|b", "--raw"]
    );
    assert_eq!(
        words(r#"idem list --scope "$(printf '%s' "$A" | idem scope)" --all"#),
        [
            "idem",
            "list",
            "--scope",
            r#"$(printf '%s' "$A" | idem scope)"#,
            "--all"
        ]
    );
    assert_eq!(idem_words("cargo install idem-cli"), None);
    let joined = idem_lines("```console\n$ idem --store x \\\n    list\nout\n```\n$ idem no\n");
    assert_eq!(joined, ["idem --store x list"]);
    assert!(Cli::try_parse_from(["idem", "list", "--no-such-option"]).is_err());
}
