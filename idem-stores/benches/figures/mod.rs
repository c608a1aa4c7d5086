//! How the memory-store report benches turn timings into table cells: medians, and a goal's
//! verdict.

/// The median of `values` (the upper one of an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// "met", or how far `ratio` is above `most`, in the goal's unit.
pub fn verdict(ratio: f64, most: f64) -> String {
    if ratio <= most {
        "met".to_owned()
    } else {
        format!("short by {:.2}×", ratio - most)
    }
}
