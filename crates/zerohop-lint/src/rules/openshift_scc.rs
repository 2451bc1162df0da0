//! OpenShift's SecurityContextConstraints admission: what a pod may ask for
//! under `restricted-v2`, and which service accounts the set lets ask for
//! more.

use std::collections::HashSet;

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};
use zerohop_known::shell::quote;

use super::facts::is_openshift;
use crate::model::{Object, PodTemplate, Workspace, pod_templates};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};

const SCC_GROUP: &str = "security.openshift.io";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The prefix of the ClusterRoles that grant `use` of one default SCC
/// (openshift/cluster-kube-apiserver-operator
/// `manifests/0000_20_kube-apiserver-operator_00_cr-*.yaml`), the roles
/// `oc adm policy add-scc-to-user` binds.
const SCC_ROLE_PREFIX: &str = "system:openshift:scc:";

/// What a pod asks for that `restricted-v2` does not allow, and where.
struct Beyond {
    /// Path from the object's root.
    path: Vec<PathStep<'static>>,
    /// What, for the message: "adds capability `IPC_LOCK`".
    what: String,
}

/// The capabilities `restricted-v2` lets a container add: its
/// `allowedCapabilities` (openshift/cluster-kube-apiserver-operator
/// `bindata/bootkube/scc-manifests/0000_20_kube-apiserver-operator_00_scc-restricted-v2.yaml`
/// at 05211dd6fa93aff49d93c75be90a4c70ee6635c3).
const RESTRICTED_V2_CAPABILITIES: [&str; 1] = ["NET_BIND_SERVICE"];

/// What the template asks for beyond `restricted-v2`, in the order the
/// SCC's fields read: `allowHostNetwork`/`PID`/`IPC: false`, `volumes`
/// without `hostPath`, `runAsUser: MustRunAsRange` (never root),
/// `allowPrivilegedContainer: false`, `allowPrivilegeEscalation: false`,
/// `allowedCapabilities: [NET_BIND_SERVICE]`.
fn beyond_restricted_v2(template: &PodTemplate<'_>) -> Vec<Beyond> {
    let mut found = Vec::new();
    let at = |rest: &[PathStep<'static>]| template.path(rest);
    let spec = |key: &'static str| template.object.get(&at(&[PathStep::Key(key)]));
    for key in ["hostNetwork", "hostPID", "hostIPC"] {
        if spec(key).and_then(Node::as_bool) == Some(true) {
            found.push(Beyond {
                path: at(&[PathStep::Key(key)]),
                what: format!("sets `{key}`"),
            });
        }
    }
    let volumes = spec("volumes").map(Node::items).unwrap_or_default();
    for (index, volume) in volumes.iter().enumerate() {
        if volume.get("hostPath").is_some() {
            found.push(Beyond {
                path: at(&[
                    PathStep::Key("volumes"),
                    PathStep::Index(index),
                    PathStep::Key("hostPath"),
                ]),
                what: "mounts a hostPath volume".to_owned(),
            });
        }
    }
    let root_user = |context: Option<&Node>| {
        context
            .and_then(|c| c.get("runAsUser"))
            .and_then(Node::as_i64)
            == Some(0)
    };
    if root_user(spec("securityContext")) {
        found.push(Beyond {
            path: at(&[PathStep::Key("securityContext"), PathStep::Key("runAsUser")]),
            what: "runs as root (`runAsUser: 0`)".to_owned(),
        });
    }
    for (container_path, container) in &template.containers {
        let context = container.get("securityContext");
        let path = |rest: &[PathStep<'static>]| {
            let mut path = container_path.clone();
            path.push(PathStep::Key("securityContext"));
            path.extend_from_slice(rest);
            at(&path)
        };
        if root_user(context) {
            found.push(Beyond {
                path: path(&[PathStep::Key("runAsUser")]),
                what: "runs as root (`runAsUser: 0`)".to_owned(),
            });
        }
        for (key, what) in [
            ("privileged", "is privileged"),
            ("allowPrivilegeEscalation", "allows privilege escalation"),
        ] {
            if context.and_then(|c| c.get(key)).and_then(Node::as_bool) == Some(true) {
                found.push(Beyond {
                    path: path(&[PathStep::Key(key)]),
                    what: what.to_owned(),
                });
            }
        }
        let added = context
            .and_then(|c| c.get("capabilities"))
            .and_then(|c| c.get("add"))
            .map(Node::items)
            .unwrap_or_default();
        for (index, capability) in added.iter().enumerate() {
            let Some(name) = capability.as_str() else {
                continue;
            };
            let bare = name.trim().to_ascii_uppercase();
            let bare = bare.strip_prefix("CAP_").unwrap_or(&bare);
            if !RESTRICTED_V2_CAPABILITIES.contains(&bare) {
                found.push(Beyond {
                    path: path(&[
                        PathStep::Key("capabilities"),
                        PathStep::Key("add"),
                        PathStep::Index(index),
                    ]),
                    what: format!("adds capability `{}`", short(name)),
                });
            }
        }
    }
    found
}

/// The service account pods of the template run as: `serviceAccountName`
/// (or the deprecated `serviceAccount`), else `default`.
fn service_account<'a>(template: &PodTemplate<'a>) -> &'a str {
    ["serviceAccountName", "serviceAccount"]
        .iter()
        .find_map(|key| {
            template
                .object
                .get(&template.path(&[PathStep::Key(key)]))
                .and_then(Node::as_str)
                .filter(|name| !name.is_empty())
        })
        .unwrap_or("default")
}

/// The service accounts the set lets use an SCC beyond the default, found
/// in one pass over the set.
#[derive(Default)]
struct Grants {
    /// `(namespace, account)`.
    accounts: HashSet<(String, String)>,
    /// Namespaces all of whose service accounts may.
    namespaces: HashSet<String>,
    /// Every service account may.
    everyone: bool,
}

impl Grants {
    /// The grants of the set: SCCs listing accounts (or their groups) in
    /// `users` or `groups`, and RoleBindings or ClusterRoleBindings binding
    /// them to a `system:openshift:scc:*` ClusterRole or to a role of the set
    /// that grants `use` on `securitycontextconstraints`. A RoleBinding
    /// grants only in its own namespace.
    fn of(workspace: &Workspace<'_>) -> Grants {
        let mut grants = Grants::default();
        for scc in workspace.of_kind(SCC_GROUP, "SecurityContextConstraints") {
            for key in ["users", "groups"] {
                for name in scc
                    .get(&[PathStep::Key(key)])
                    .map(Node::items)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Node::as_str)
                {
                    grants.add_name(name, None);
                }
            }
        }
        let granting: HashSet<(&str, &str, &str)> = workspace
            .objects
            .iter()
            .filter(|role| {
                (role.is(RBAC_GROUP, "Role") || role.is(RBAC_GROUP, "ClusterRole"))
                    && role_grants_use(role)
            })
            .map(|role| {
                let namespace = if role.kind == "Role" {
                    role.namespace_or_default()
                } else {
                    ""
                };
                (role.kind, namespace, role.name)
            })
            .collect();
        for binding in &workspace.objects {
            let cluster_wide = binding.is(RBAC_GROUP, "ClusterRoleBinding");
            if !cluster_wide && !binding.is(RBAC_GROUP, "RoleBinding") {
                continue;
            }
            let home = binding.namespace_or_default();
            let role_kind = binding
                .str_at(&[PathStep::Key("roleRef"), PathStep::Key("kind")])
                .unwrap_or("");
            let role_name = binding
                .str_at(&[PathStep::Key("roleRef"), PathStep::Key("name")])
                .unwrap_or("");
            let role_namespace = if role_kind == "Role" { home } else { "" };
            let grants_use = role_name.starts_with(SCC_ROLE_PREFIX)
                || granting.contains(&(role_kind, role_namespace, role_name));
            if !grants_use {
                continue;
            }
            let only_in = (!cluster_wide).then_some(home);
            for subject in binding
                .get(&[PathStep::Key("subjects")])
                .map(Node::items)
                .unwrap_or_default()
            {
                let field = |key: &str| subject.get(key).and_then(Node::as_str);
                match (field("kind"), field("name")) {
                    (Some("ServiceAccount"), Some(name)) => {
                        let namespace = field("namespace").unwrap_or(home);
                        if only_in.is_none_or(|home| home == namespace) {
                            grants
                                .accounts
                                .insert((namespace.to_owned(), name.to_owned()));
                        }
                    }
                    (Some("Group" | "User"), Some(name)) => grants.add_name(name, only_in),
                    _ => {}
                }
            }
        }
        grants
    }

    /// Adds a user or group name (`system:serviceaccount:NS:SA`,
    /// `system:serviceaccounts:NS`, `system:serviceaccounts`), granted in
    /// namespace `only_in` alone when given.
    fn add_name(&mut self, name: &str, only_in: Option<&str>) {
        let here = |namespace: &str| only_in.is_none_or(|home| home == namespace);
        if let Some(rest) = name.strip_prefix("system:serviceaccount:") {
            if let Some((namespace, account)) = rest.split_once(':')
                && here(namespace)
            {
                self.accounts
                    .insert((namespace.to_owned(), account.to_owned()));
            }
        } else if let Some(namespace) = name.strip_prefix("system:serviceaccounts:") {
            if here(namespace) {
                self.namespaces.insert(namespace.to_owned());
            }
        } else if name == "system:serviceaccounts" {
            match only_in {
                Some(home) => {
                    self.namespaces.insert(home.to_owned());
                }
                None => self.everyone = true,
            }
        }
    }

    fn allow(&self, namespace: &str, account: &str) -> bool {
        self.everyone
            || self.namespaces.contains(namespace)
            || self
                .accounts
                .contains(&(namespace.to_owned(), account.to_owned()))
    }
}

/// Whether a role of the set grants `use` of SCCs.
fn role_grants_use(role: &Object<'_>) -> bool {
    role.get(&[PathStep::Key("rules")])
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .any(|rule| {
            let has = |key: &str, wanted: &[&str]| {
                rule.get(key)
                    .map(Node::items)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Node::as_str)
                    .any(|value| wanted.contains(&value))
            };
            has("resources", &["securitycontextconstraints", "*"]) && has("verbs", &["use", "*"])
        })
}

declare_lint! {
    /// On OpenShift, a pod that asks for more than `restricted-v2` allows, under a service account the set grants no other SCC.
    ///
    /// ## What it checks
    /// On a set for OpenShift (it holds a MachineConfig,
    /// SecurityContextConstraints or a `config.openshift.io` object): pods
    /// and pod templates (MPIJob launchers and workers included) that add a
    /// capability other than `NET_BIND_SERVICE`, run privileged, allow
    /// privilege escalation, run as user 0, use the host's network, PID or
    /// IPC namespace, or mount a `hostPath`, when nothing in the set lets
    /// their service account (`serviceAccountName`, else `default`) use
    /// another SCC: no SecurityContextConstraints lists it (`users`,
    /// `groups`), and no RoleBinding or ClusterRoleBinding binds it to a
    /// `system:openshift:scc:*` ClusterRole or to a role granting `use` on
    /// `securitycontextconstraints`.
    ///
    /// ## Why it matters
    /// SCC admission lets a pod in only under an SCC its service account
    /// may use; every authenticated account may use `restricted-v2`, which
    /// drops ALL capabilities and allows back only `NET_BIND_SERVICE`
    /// (`requiredDropCapabilities: [ALL]`, `allowedCapabilities:
    /// [NET_BIND_SERVICE]`), runs pods with a UID from the namespace's range
    /// (`runAsUser: MustRunAsRange`), and allows no privilege, privilege
    /// escalation, host namespace or `hostPath`
    /// (openshift/cluster-kube-apiserver-operator
    /// `bindata/bootkube/scc-manifests/0000_20_kube-apiserver-operator_00_scc-restricted-v2.yaml`
    /// at 05211dd6fa93aff49d93c75be90a4c70ee6635c3). An RDMA worker that adds
    /// `IPC_LOCK`, or an MPI worker whose `sshd` must run as root, is
    /// rejected ("unable to validate against any security context
    /// constraint"): the MPIJob's pods are never created and the job waits
    /// forever.
    ///
    /// ## How to fix
    /// Run the pods under a service account of their own, and let it use an
    /// SCC that allows what they ask for (a custom SCC with `IPC_LOCK` in
    /// `allowedCapabilities`, or `privileged`), with `oc adm policy
    /// add-scc-to-user` or a RoleBinding to `system:openshift:scc:<name>`,
    /// rendered with the workload.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL066/fail/`:
    ///
    /// ```text
    /// error[ZL066]: adds capability `IPC_LOCK`, beyond scc restricted-v2, and service account `default` of namespace `ai-training` may use no other scc in this openshift set: admission rejects the pod
    ///   --> fail/input.yaml:29:23
    ///    |
    /// 29 |                 add: [IPC_LOCK]
    ///    |                       ^^^^^^^^
    ///    = object: MPIJob/ai-training/nccl-tests
    ///    = help: run the pods under their own service account and let it use an scc that allows what they ask for (a custom one, or privileged)
    ///            oc create serviceaccount nccl-tests -n ai-training
    ///            oc adm policy add-scc-to-user privileged -z nccl-tests -n ai-training
    /// ```
    pub(crate) static POD_BEYOND_RESTRICTED_SCC = {
        id: "ZL066",
        name: "pod-beyond-restricted-scc",
        severity: Error,
        check: pod_beyond_restricted_scc,
    };
}

fn pod_beyond_restricted_scc(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    if !is_openshift(workspace) {
        return;
    }
    let grants = Grants::of(workspace);
    for template in pod_templates(workspace) {
        let beyond = beyond_restricted_v2(template);
        let Some(first) = beyond.first() else {
            continue;
        };
        let namespace = template.object.namespace_or_default();
        let account = service_account(template);
        if grants.allow(namespace, account) {
            continue;
        }
        let more = match beyond.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        // The account to create: the workload's own, unless it has one.
        let suggested = if account == "default" {
            template.object.name
        } else {
            account
        };
        sink.report(
            &template.object,
            &first.path,
            format!(
                "{}{more}, beyond scc restricted-v2, and service account `{}` of namespace `{}` may use no other scc in this openshift set: admission rejects the pod",
                first.what,
                short(account),
                short(namespace)
            ),
            Remediation::new(
                "run the pods under their own service account and let it use an scc that allows what they ask for (a custom one, or privileged)",
            )
            .command(format!(
                "oc create serviceaccount {sa} -n {ns}\noc adm policy add-scc-to-user privileged -z {sa} -n {ns}",
                sa = quote(suggested),
                ns = quote(namespace)
            )),
        );
    }
}
