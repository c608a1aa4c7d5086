//! Timestamps as people and scripts read them: RFC 3339 in UTC, and "in 3m" / "4m ago".

use std::time::Duration;

use idem_core::store::Timestamp;
use time::OffsetDateTime;

/// `at` in RFC 3339, UTC, to the millisecond: `2025-12-01T11:05:03.120Z`. Times past the year
/// 9999 read as its last millisecond.
pub(crate) fn rfc3339(at: Timestamp) -> String {
    let nanos = i128::from(at.as_millis()) * 1_000_000;
    let time =
        OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or_else(|_| last_representable());
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        time.year(),
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute(),
        time.second(),
        time.millisecond()
    )
}

fn last_representable() -> OffsetDateTime {
    // 9999-12-31T23:59:59.999Z
    OffsetDateTime::from_unix_timestamp_nanos(253_402_300_799_999_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// How far `at` is from `now`: `in 3m`, `4m ago`, `now`. One unit, rounded down: seconds under
/// a minute, minutes under an hour, hours under two days, days beyond.
pub(crate) fn relative(at: Timestamp, now: Timestamp) -> String {
    if at >= now {
        let ahead = at.saturating_duration_since(now);
        if ahead < Duration::from_secs(1) {
            return "now".to_owned();
        }
        format!("in {}", span(ahead))
    } else {
        format!("{} ago", span(now.saturating_duration_since(at)))
    }
}

fn span(length: Duration) -> String {
    let secs = length.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => format!("{}m", secs / 60),
        3_600..172_800 => format!("{}h", secs / 3_600),
        _ => format!("{}d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_is_utc_to_the_millisecond() {
        assert_eq!(rfc3339(Timestamp::EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(Timestamp::from_millis(1_764_587_103_120)),
            "2025-12-01T11:05:03.120Z"
        );
        assert_eq!(rfc3339(Timestamp::MAX), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn relative_times_use_one_unit() {
        let now = Timestamp::from_millis(1_000_000_000);
        let secs = |s: u64| Duration::from_secs(s);
        assert_eq!(relative(now + secs(180), now), "in 3m");
        assert_eq!(relative(now - secs(245), now), "4m ago");
        assert_eq!(relative(now + secs(59), now), "in 59s");
        assert_eq!(relative(now + secs(3 * 3_600 + 5), now), "in 3h");
        assert_eq!(relative(now + secs(3 * 86_400), now), "in 3d");
        assert_eq!(relative(now, now), "now");
    }
}
