//! The few styles the human renderers use, in one place.

use anstyle::{AnsiColor, Style};

use crate::finding::Status;

/// Bold text for headings.
pub(crate) const HEADING: Style = Style::new().bold();
/// Dimmed text for evidence and secondary detail.
pub(crate) const DIM: Style = Style::new().dimmed();

/// The style of a status label.
pub(crate) fn status(status: Status) -> Style {
    let color = match status {
        Status::Pass => AnsiColor::Green,
        Status::Info => AnsiColor::Cyan,
        Status::Warn => AnsiColor::Yellow,
        Status::Fail => AnsiColor::Red,
        Status::Unknown | Status::Blocked => AnsiColor::Magenta,
        Status::NotApplicable => AnsiColor::BrightBlack,
    };
    Style::new().fg_color(Some(color.into())).bold()
}
