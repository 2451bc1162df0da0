//! Absolute paths: mount points on the nodes and exports on the server.

use zerohop_known::names::describe;

/// `PATH_MAX` in `include/uapi/linux/limits.h`, with its NUL.
const PATH_MAX: usize = 4096;

/// Checks an absolute path and returns it with repeated and trailing
/// slashes removed, the form systemd and the kernel use. Refused: a
/// relative path, `.` and `..` components (the path must say where it is,
/// not how to get there), control characters (no script or unit line can
/// carry them), a backslash (systemd reads a trailing one as a line
/// continuation, and unit name escaping uses it), and paths longer than
/// the kernel takes.
pub(crate) fn absolute_path(path: &str) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err("is not an absolute path".to_owned());
    }
    if let Some(c) = path.chars().find(|c| c.is_control() || *c == '\\') {
        return Err(format!("contains {}", describe(c)));
    }
    if path.len() >= PATH_MAX {
        return Err(format!("is longer than {} bytes", PATH_MAX - 1));
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return Err("has a `.` or `..` component".to_owned());
    }
    Ok(format!("/{}", parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_are_normalized_or_refused() {
        assert_eq!(absolute_path("/mnt/ai-data"), Ok("/mnt/ai-data".to_owned()));
        assert_eq!(absolute_path("//mnt//data/"), Ok("/mnt/data".to_owned()));
        assert_eq!(absolute_path("/"), Ok("/".to_owned()));
        assert_eq!(
            absolute_path("/mnt/a b;$(x)"),
            Ok("/mnt/a b;$(x)".to_owned())
        );
        for bad in [
            "",
            "mnt/data",
            "/mnt/../etc",
            "/mnt/./x",
            "/mnt/a\nb",
            "/mnt/\u{1b}]0;x\u{7}",
            "/mnt/a\\",
        ] {
            assert!(absolute_path(bad).is_err(), "{bad:?}");
        }
        assert!(absolute_path(&format!("/{}", "a".repeat(PATH_MAX))).is_err());
    }
}
