//! The report in Markdown.

use std::fmt::Write;

use super::Report;

/// `report` as a Markdown page.
pub(crate) fn render(report: &Report) -> String {
    let setup = &report.setup;
    let mut page = String::new();
    let _ = writeln!(page, "# idem-certify: {}\n", setup.store);
    if let Some(broken) = &setup.broken {
        let _ = writeln!(
            page,
            "Wrapped in the conformance kit's broken store `{broken}`: anomalies are expected.\n"
        );
    }
    let _ = writeln!(
        page,
        "{} s, {} workers, lease {} ms, faults: {}, seed {}.\n",
        setup.seconds,
        setup.workers,
        setup.lease_ms,
        if setup.faults.is_empty() {
            "none".to_owned()
        } else {
            setup.faults.join(", ")
        },
        setup.seed
    );
    let _ = writeln!(page, "**Anomalies: {}**\n", report.anomalies);
    let _ = writeln!(page, "| class | count | meaning |\n|---|---:|---|");
    for (class, count) in &report.anomalies_by_class {
        let _ = writeln!(page, "| `{class:?}` | {count} | {} |", class.meaning());
    }
    let _ = writeln!(
        page,
        "\nFalse alarms (\"not recorded\" for an outcome the store holds): {}\n",
        report.false_alarms
    );
    for alarm in &report.false_alarm_list {
        let call = &alarm.call;
        let faults: Vec<String> = alarm
            .faults
            .iter()
            .map(|fault| format!("{} on {} at {}", fault.kind, fault.process, fault.start))
            .collect();
        let others: Vec<&str> = alarm
            .history
            .iter()
            .filter(|other| other.id != call.id)
            .map(|other| other.id.as_str())
            .collect();
        let _ = writeln!(
            page,
            "- call `{}` on key `{}` (process {}, {} to {}): faults around it: {}; other \
             calls of the key that ran or answered first: {}",
            call.id,
            call.key,
            call.process,
            call.invoked,
            call.ended_at().map_or("-".to_owned(), |t| t.to_string()),
            if faults.is_empty() {
                "none".to_owned()
            } else {
                faults.join(", ")
            },
            if others.is_empty() {
                "none".to_owned()
            } else {
                others.join(", ")
            }
        );
    }
    if !report.false_alarm_list.is_empty() {
        let _ = writeln!(
            page,
            "\nThe calls' events are in `report.json` (`false_alarm_list`).\n"
        );
    }
    let _ = writeln!(
        page,
        "Fencing regressions the design allows (a fresh reservation, attempt 1, after the \
         earlier body stopped, with a token its own clock proposed; reported apart): {}\n",
        report.fencing_regressions
    );
    let _ = writeln!(
        page,
        "## Calls by outcome\n\n| outcome | calls |\n|---|---:|"
    );
    for (outcome, count) in &report.calls_by_outcome {
        let _ = writeln!(page, "| {outcome} | {count} |");
    }
    let _ = writeln!(page, "\n## Faults\n\n| fault | injected |\n|---|---:|");
    for (kind, count) in &report.faults_by_kind {
        let _ = writeln!(page, "| {kind} | {count} |");
    }
    let _ = writeln!(
        page,
        "\n![calls over time](calls.svg)\n\n![latency by outcome](latency.svg)\n"
    );
    if !report.examples.is_empty() {
        let _ = writeln!(page, "## Examples\n");
    }
    for example in &report.examples {
        let anomaly = &example.anomaly;
        let _ = writeln!(
            page,
            "### `{:?}` on key `{}`\n\n{} (calls {}).\n",
            anomaly.class,
            anomaly.key,
            anomaly.detail,
            anomaly.calls.join(", ")
        );
        let _ = writeln!(
            page,
            "| call | op | body (attempt, fencing) | effects | outcome |\n|---|---|---|---|---|"
        );
        for call in &example.history {
            let body = call
                .body
                .map(|(_, attempt, fencing)| format!("{attempt}, {fencing}"))
                .unwrap_or_default();
            let effects: Vec<String> = call
                .effects
                .iter()
                .map(|(step, fencing, _)| format!("{step}@{fencing}"))
                .collect();
            let _ = writeln!(
                page,
                "| {} | {:?} | {body} | {} | {} |",
                call.id,
                call.op,
                effects.join(" "),
                super::outcome_name(call)
            );
        }
        let _ = writeln!(page);
    }
    page
}
