//! What a container sets in its environment: `env` items, and assignments
//! in the shell script of its `command` and `args`, where launch scripts
//! usually set NCCL's variables.

use zerohop_k8s::yaml::{Node, PathStep};

/// The words of a container's `command` and `args`: what it runs, and the
/// shell script it may run.
pub(crate) fn command_words(container: &Node) -> impl Iterator<Item = &str> {
    ["command", "args"]
        .into_iter()
        .filter_map(|key| container.get(key))
        .flat_map(Node::items)
        .filter_map(Node::as_str)
}

/// One place where a container sets a variable.
#[derive(Debug, Clone)]
pub(crate) struct Setting {
    /// Where, under the container: `env[i].value` (`env[i]` when the item
    /// has no `value`), or the `command`/`args` word that assigns it.
    pub(crate) path: Vec<PathStep<'static>>,
    /// The value written: an `env` item's `value` as Kubernetes prints it,
    /// or the text after `NAME=` up to the next blank or shell operator,
    /// unquoted. `None` when set without a value one can read (`valueFrom`,
    /// `mpirun -x NAME` forwarding the caller's).
    pub(crate) value: Option<String>,
    /// Whether it is set in `command`/`args` rather than `env`.
    pub(crate) in_script: bool,
}

/// Every place a container sets the variable `name`, `env` items first,
/// then the script's assignments (`export NAME=V`, `NAME=V cmd`, `env
/// NAME=V`, `mpirun -x NAME=V`, a bare `-x NAME`), each in the order
/// written.
pub(crate) fn settings(container: &Node, name: &str) -> Vec<Setting> {
    let mut found = Vec::new();
    if let Some(env) = container.get("env") {
        for (index, item) in env.items().iter().enumerate() {
            if item.get("name").and_then(Node::as_str) != Some(name) {
                continue;
            }
            let value = item.get("value");
            let mut path = vec![PathStep::Key("env"), PathStep::Index(index)];
            if value.is_some() {
                path.push(PathStep::Key("value"));
            }
            found.push(Setting {
                path,
                value: value.and_then(Node::scalar_text),
                in_script: false,
            });
        }
    }
    for key in ["command", "args"] {
        let Some(words) = container.get(key) else {
            continue;
        };
        for (index, word) in words.items().iter().enumerate() {
            let Some(word) = word.as_str() else {
                continue;
            };
            let mut rest = word;
            while let Some(at) = rest.find(name) {
                let before = rest[..at].chars().next_back();
                let after = &rest[at + name.len()..];
                rest = after;
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let value = if let Some(value) = after.strip_prefix('=') {
                    let end = value
                        .find(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
                        .unwrap_or(value.len());
                    Some(value[..end].trim_matches(['"', '\'']).to_owned())
                } else if after.is_empty()
                    || after.starts_with(|c: char| c.is_whitespace() || c == ';')
                {
                    None
                } else {
                    continue;
                };
                found.push(Setting {
                    path: vec![PathStep::Key(key), PathStep::Index(index)],
                    value,
                    in_script: true,
                });
            }
        }
    }
    found
}

/// The value a container gives the variable `name`: the last assignment
/// with a value in its `command`/`args` (the script runs after the
/// environment is set, so it wins), else the last `env` item. `Some("")`
/// when set without a value one can read.
pub(crate) fn value_of(container: &Node, name: &str) -> Option<String> {
    let all = settings(container, name);
    let from_script = all.iter().filter(|setting| setting.in_script).fold(
        None,
        |last: Option<String>, setting| match &setting.value {
            Some(value) => Some(value.clone()),
            None => last.or_else(|| Some(String::new())),
        },
    );
    from_script.or_else(|| {
        all.iter()
            .rev()
            .find(|setting| !setting.in_script)
            .map(|setting| setting.value.clone().unwrap_or_default())
    })
}

#[cfg(test)]
mod tests {
    use zerohop_k8s::yaml::{Limits, load_str};

    use super::*;

    fn container(yaml: &str) -> Node {
        load_str(yaml, &Limits::default())
            .expect("yaml")
            .pop()
            .expect("one document")
    }

    #[test]
    fn the_script_wins_over_env() {
        let c = container(
            "env: [{name: NCCL_IB_TC, value: \"0\"}]\nargs: [\"export NCCL_IB_TC=106; torchrun x\"]",
        );
        assert_eq!(value_of(&c, "NCCL_IB_TC").as_deref(), Some("106"));
        let found = settings(&c, "NCCL_IB_TC");
        assert_eq!(found.len(), 2);
        assert!(!found[0].in_script && found[1].in_script);
    }

    #[test]
    fn a_forwarded_variable_has_no_value() {
        let c = container("command: [mpirun, -x, NCCL_IB_HCA, all_reduce_perf]");
        assert_eq!(value_of(&c, "NCCL_IB_HCA").as_deref(), Some(""));
        assert_eq!(value_of(&c, "NCCL_IB_TC"), None);
        let c = container("args: [\"X_NCCL_IB_HCA=1 NCCL_IB_HCAX=2\"]");
        assert_eq!(value_of(&c, "NCCL_IB_HCA"), None);
    }

    #[test]
    fn env_values_keep_their_text() {
        let c = container("env: [{name: NCCL_NET_GDR_LEVEL, value: 3}]");
        let found = settings(&c, "NCCL_NET_GDR_LEVEL");
        assert_eq!(found[0].value.as_deref(), Some("3"));
        assert_eq!(found[0].path.len(), 3);
    }
}
