//! Aligned columns of text, and aligned `name  value` lines.

use crate::visible::visible;

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// A table: a header row, then rows, in columns as wide as their widest cell, two spaces apart.
#[derive(Debug)]
pub(crate) struct Table {
    columns: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and alignments.
    pub(crate) fn new(columns: &[(&'static str, Align)]) -> Self {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (one cell per column), with what a terminal would obey escaped.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        let cells = cells
            .into_iter()
            .map(|cell| visible(&cell).into_owned())
            .collect();
        self.rows.push(cells);
    }

    /// Adds a row of cells already escaped for a terminal ([`visible`],
    /// [`visible_bytes`](crate::visible::visible_bytes)).
    pub(crate) fn row_shown(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        self.rows.push(cells);
    }

    /// The table as text, one line per row, each ending in a newline; trailing spaces trimmed.
    pub(crate) fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|column| {
                self.rows
                    .iter()
                    .map(|row| width(&row[column]))
                    .chain([self.columns[column].0.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let header: Vec<String> = self
            .columns
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect();
        let mut text = String::new();
        for row in [&header].into_iter().chain(&self.rows) {
            let mut line = String::new();
            for (column, cell) in row.iter().enumerate() {
                if column > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(widths[column] - width(cell));
                match self.columns[column].1 {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(cell);
                    }
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

/// `name  value` lines with the values lined up, one per pair.
pub(crate) fn details(pairs: &[(&str, String)]) -> String {
    let name_width = pairs.iter().map(|(name, _)| width(name)).max().unwrap_or(0);
    pairs
        .iter()
        .map(|(name, value)| {
            let pad = " ".repeat(name_width - width(name));
            let value = visible(value);
            format!("{name}{pad}  {value}").trim_end().to_owned() + "\n"
        })
        .collect()
}

/// The width of `text` on a terminal, counting characters.
fn width(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let mut table = Table::new(&[("KEY", Align::Left), ("BYTES", Align::Right)]);
        table.row(vec!["idem|a|-|1".into(), "7".into()]);
        table.row(vec!["k".into(), "1234567".into()]);
        assert_eq!(
            table.render(),
            "KEY           BYTES\nidem|a|-|1        7\nk           1234567\n"
        );
    }

    #[test]
    fn details_line_up() {
        assert_eq!(
            details(&[("key", "k".into()), ("fencing token", "7".into())]),
            "key            k\nfencing token  7\n"
        );
    }
}
