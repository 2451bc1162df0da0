//! What a parser could not read: a cut-off table, a row with missing
//! columns, a line it did not understand where it expected structure.
//!
//! Every parser returns what it could read *and* these notes, never an
//! error: a truncated log still says which transport NCCL picked, and the
//! judgement says that it rests on a partial capture.

/// One thing that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The 1-based line it is about; 0 for the capture as a whole.
    pub line: u32,
    /// What could not be read, as a lowercase fragment.
    pub what: String,
}

/// The notes of one parse, at most [`Notes::MAX`] kept, the rest counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    items: Vec<Note>,
    dropped: usize,
}

impl Notes {
    /// The most notes kept; a capture of garbage must not make a report of
    /// garbage.
    pub const MAX: usize = 32;

    /// Records that line `line` (0: the whole capture) could not be read.
    pub fn push(&mut self, line: u32, what: impl Into<String>) {
        if self.items.len() < Self::MAX {
            self.items.push(Note {
                line,
                what: what.into(),
            });
        } else {
            self.dropped += 1;
        }
    }

    /// The kept notes, in the order they were found.
    pub fn items(&self) -> &[Note] {
        &self.items
    }

    /// How many notes were recorded, kept or not.
    pub fn total(&self) -> usize {
        self.items.len() + self.dropped
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_beyond_the_cap_are_counted_not_kept() {
        let mut notes = Notes::default();
        for line in 0..100 {
            notes.push(line, "x");
        }
        assert_eq!(notes.items().len(), Notes::MAX);
        assert_eq!(notes.total(), 100);
        assert!(!notes.is_empty());
    }
}
