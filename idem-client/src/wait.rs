//! How long to wait before the next attempt.

use std::time::Duration;

use crate::config::Config;

/// The wait before attempt `attempt + 1`, after `attempt` attempts: the server's `Retry-After`
/// (capped) when it named one, else the jittered exponential backoff.
pub(crate) fn before_next(
    attempt: u32,
    retry_after: Option<Duration>,
    config: &Config,
) -> Duration {
    match retry_after {
        Some(asked) => asked.min(config.max_retry_after),
        None => backoff(attempt, config),
    }
}

/// `initial * 2^(attempt - 1)`, capped at `max`, drawn between half of it and all of it: never
/// at once, and never in step with other clients that failed at the same moment.
fn backoff(attempt: u32, config: &Config) -> Duration {
    let doublings = attempt.saturating_sub(1).min(31);
    let full = config
        .initial_backoff
        .saturating_mul(1 << doublings)
        .min(config.max_backoff);
    let half = full / 2;
    let jitter_nanos = fastrand::u64(0..=duration_nanos(full - half));
    half + Duration::from_nanos(jitter_nanos)
}

fn duration_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_its_jitter_and_stops_at_the_cap() {
        let config = Config::default();
        for _ in 0..200 {
            for (attempt, full) in [(1, 200), (2, 400), (3, 800), (6, 5_000), (40, 5_000)] {
                let wait = before_next(attempt, None, &config);
                let full = Duration::from_millis(full);
                assert!(wait >= full / 2 && wait <= full, "{attempt}: {wait:?}");
            }
        }
    }

    #[test]
    fn retry_after_is_obeyed_up_to_its_cap() {
        let config = Config::default();
        let asked = |seconds| before_next(1, Some(Duration::from_secs(seconds)), &config);
        assert_eq!(asked(0), Duration::ZERO);
        assert_eq!(asked(3), Duration::from_secs(3));
        assert_eq!(asked(3600), config.max_retry_after);
    }
}
