//! `equalize`'s table files (`--save-table`, `--table`), and the first frame's table shared with
//! the frames after it.
//!
//! A table file is CSV: a header, then one row per level 0, 1, ..., maxval, in order, with the
//! level and what it maps to; one mapping column (`level,mapped`: a gray frame, the luma, or the
//! gray read of colour) or three (`level,red,green,blue`: `--colour each`). The maxval of the
//! frames it maps is the last level.

use std::sync::{Arc, Condvar, Mutex};

/// A mapping of every level 0..=maxval: one column, or one per colour channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Each as long as the others, maxval + 1 entries, none above maxval.
    columns: Vec<Vec<u16>>,
}

/// The most bytes a table file may hold: 65,536 rows (levels 0 to 65535, the most a frame has) of
/// up to 64 bytes, room for `65535,65535,65535,65535` and spaces an edit may leave.
pub const MAX_BYTES: u64 = 65_536 * 64;
/// What [`MAX_BYTES`] is the size of, for the message refusing a longer file.
pub const MAX_WHAT: &str = "a table (65,536 rows of levels)";

/// The header of a table of one mapping, and of one per channel.
const ONE: &str = "level,mapped";
const EACH: &str = "level,red,green,blue";

impl Table {
    /// The table of these columns (one, or red, green and blue), each maxval + 1 entries.
    pub fn new(columns: Vec<Vec<u16>>) -> Table {
        assert!(columns.len() == 1 || columns.len() == 3, "one mapping or three");
        assert!(columns.iter().all(|c| !c.is_empty() && c.len() == columns[0].len()));
        Table { columns }
    }

    /// The mapping of plane `c` (0 for a single plane; 0, 1, 2 for red, green and blue): a
    /// one-column table maps every plane alike.
    pub fn column(&self, c: usize) -> &[u16] {
        &self.columns[if self.columns.len() == 1 { 0 } else { c }]
    }

    /// Refuses a table of three mappings for a frame of one plane to map.
    pub fn check_planes(&self, planes: usize) -> Result<(), String> {
        if self.columns.len() == 3 && planes == 1 {
            return Err("the table has a mapping for each of red, green and blue (--colour each), and \
                        this frame has one plane to map (a gray frame, or --colour luma or gray)"
                .into());
        }
        Ok(())
    }

    /// The table as CSV.
    pub fn to_csv(&self) -> String {
        let mut text = String::with_capacity(16 * self.columns[0].len());
        text.push_str(if self.columns.len() == 1 { ONE } else { EACH });
        text.push('\n');
        for level in 0..self.columns[0].len() {
            text.push_str(&level.to_string());
            for column in &self.columns {
                text.push(',');
                text.push_str(&column[level].to_string());
            }
            text.push('\n');
        }
        text
    }

    /// A table from CSV as [`Table::to_csv`] writes it (a user's edit of one): a header whose
    /// first field is `level` and which names one or three mappings; rows of levels 0, 1, ...
    /// with as many fields, each mapped value at most the last level. Line ends `\n` or `\r\n`.
    pub fn parse(text: &str) -> Result<Table, String> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or("an empty file, where a table's header is expected")?;
        let names: Vec<&str> = header.split(',').map(str::trim).collect();
        if names[0] != "level" || !(names.len() == 2 || names.len() == 4) {
            return Err(format!(
                "line 1: the header is '{}', where '{ONE}' or '{EACH}' is expected",
                header.trim()
            ));
        }
        let mut columns = vec![Vec::new(); names.len() - 1];
        for (i, line) in lines {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let at = |why: String| format!("line {}: {why}", i + 1);
            if fields.len() != names.len() {
                return Err(at(format!("{} fields, where the header has {}", fields.len(), names.len())));
            }
            let level = columns[0].len();
            if fields[0].parse::<usize>().ok() != Some(level) {
                return Err(at(format!(
                    "level '{}', where {level} is next (levels go 0, 1, 2, ...)",
                    fields[0]
                )));
            }
            if level > u16::MAX as usize {
                return Err(at("more than 65536 levels".into()));
            }
            for (column, field) in columns.iter_mut().zip(&fields[1..]) {
                let mapped: u16 =
                    field.parse().map_err(|_| at(format!("'{field}' is not a level (0 to 65535)")))?;
                column.push(mapped);
            }
        }
        let levels = columns[0].len();
        if levels == 0 {
            return Err("a header and no rows: a table maps levels 0 to maxval".into());
        }
        let maxval = levels - 1;
        for column in &columns {
            if let Some((l, &m)) = column.iter().enumerate().find(|(_, &m)| m as usize > maxval) {
                return Err(format!(
                    "line {}: level {l} maps to {m}, over the table's maxval {maxval} (its last level)",
                    l + 2
                ));
            }
        }
        Ok(Table { columns })
    }
}

/// The first frame's table, made by that frame's work and waited for by the later frames'
/// (`--save-table`: every frame mapped by the first frame's table). Frames are worked on by
/// several threads at once; the first frame is handed out first, so whoever waits, it is made.
#[derive(Default)]
pub struct FirstTable {
    state: Mutex<First>,
    made: Condvar,
}

#[derive(Default)]
enum First {
    #[default]
    Pending,
    Made(Arc<Table>),
    /// The first frame failed: its error is the run's.
    Failed,
}

impl FirstTable {
    /// Publishes the first frame's table.
    pub fn set(&self, table: Table) {
        *self.lock() = First::Made(Arc::new(table));
        self.made.notify_all();
    }

    /// Says that the first frame made no table, unless it has.
    pub fn fail(&self) {
        let mut state = self.lock();
        if matches!(*state, First::Pending) {
            *state = First::Failed;
            self.made.notify_all();
        }
    }

    /// The first frame's table, once it is made; `None` if the first frame failed.
    pub fn wait(&self) -> Option<Arc<Table>> {
        let mut state = self.lock();
        loop {
            match &*state {
                First::Pending => state = self.made.wait(state).unwrap_or_else(|e| e.into_inner()),
                First::Made(table) => return Some(table.clone()),
                First::Failed => return None,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, First> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Calls [`FirstTable::fail`] when dropped: the first frame's work ends, by an error or a panic,
/// without a table, and the frames waiting for it do not wait for ever.
pub struct FailUnlessSet<'a>(pub &'a FirstTable);

impl Drop for FailUnlessSet<'_> {
    fn drop(&mut self) {
        self.0.fail();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest table `--save-table` writes (three mappings of 65,536 levels, each 65535) fits
    /// the cap with room for spaces, and a longer one would be over 65,536 rows.
    #[test]
    fn the_largest_table_fits_the_cap() {
        let widest = Table::new(vec![vec![65535; 65_536]; 3]).to_csv();
        assert!((widest.len() as u64) < MAX_BYTES / 2, "{}", widest.len());
        assert!(Table::parse(&format!("{}65536,0,0,0\n", widest)).unwrap_err().contains("65536 levels"));
    }

    #[test]
    fn csv_round_trips() {
        for table in
            [Table::new(vec![vec![0, 0, 3, 3]]), Table::new(vec![vec![0, 1], vec![1, 1], vec![0, 0]])]
        {
            assert_eq!(Table::parse(&table.to_csv()).unwrap(), table);
            assert_eq!(Table::parse(&table.to_csv().replace('\n', "\r\n")).unwrap(), table);
        }
        assert_eq!(Table::new(vec![vec![0, 2, 2]]).to_csv(), "level,mapped\n0,0\n1,2\n2,2\n");
    }

    #[test]
    fn bad_tables_say_where() {
        let cases = [
            ("", "an empty file"),
            ("lvl,mapped\n0,0\n", "line 1: the header is 'lvl,mapped'"),
            ("level,a,b\n0,0,0\n", "line 1: the header"),
            ("level,mapped\n", "a header and no rows"),
            ("level,mapped\n0,0\n2,1\n", "line 3: level '2', where 1 is next"),
            ("level,mapped\n0,0\n1\n", "line 3: 1 fields, where the header has 2"),
            ("level,mapped\n0,0\n1,x\n", "line 3: 'x' is not a level"),
            ("level,mapped\n0,0\n1,2\n", "line 3: level 1 maps to 2, over the table's maxval 1"),
        ];
        for (text, want) in cases {
            let e = Table::parse(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn waiters_get_the_first_table_or_learn_it_failed() {
        let first = FirstTable::default();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| first.wait());
            first.set(Table::new(vec![vec![0, 1]]));
            assert_eq!(waiter.join().unwrap().unwrap().column(0), [0, 1]);
        });
        let failed = FirstTable::default();
        drop(FailUnlessSet(&failed));
        assert!(failed.wait().is_none());
    }
}
