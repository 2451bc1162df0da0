//! OpenShift's SecurityContextConstraints admission: what a pod may ask for
//! under `restricted-v2`, and which service accounts the set lets ask for
//! more.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};
use zerohop_known::shell::quote;

use super::facts::is_openshift;
use crate::model::{Object, PodTemplate, Workspace, pod_templates};
use crate::registry::declare_rule;
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

/// Whether an RBAC subject is the service account `account` of `namespace`,
/// or a group holding it. `home` is the binding's own namespace, where a
/// ServiceAccount subject without one lives.
fn subject_is(subject: &Node, namespace: &str, account: &str, home: &str) -> bool {
    let field = |key: &str| subject.get(key).and_then(Node::as_str);
    match field("kind") {
        Some("ServiceAccount") => {
            field("name") == Some(account) && field("namespace").unwrap_or(home) == namespace
        }
        Some("Group") => field("name").is_some_and(|group| {
            group == "system:serviceaccounts"
                || group.strip_prefix("system:serviceaccounts:") == Some(namespace)
        }),
        Some("User") => {
            field("name") == Some(format!("system:serviceaccount:{namespace}:{account}").as_str())
        }
        _ => false,
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

/// Whether the set lets service account `account` of `namespace` use an SCC
/// beyond the default: an SCC listing it (or its groups) in `users` or
/// `groups`, or a RoleBinding or ClusterRoleBinding binding it to a
/// `system:openshift:scc:*` ClusterRole or to a role of the set that grants
/// `use` on `securitycontextconstraints`.
fn granted_an_scc(workspace: &Workspace<'_>, namespace: &str, account: &str) -> bool {
    let user = format!("system:serviceaccount:{namespace}:{account}");
    let groups = [
        "system:serviceaccounts".to_owned(),
        format!("system:serviceaccounts:{namespace}"),
    ];
    let listed = workspace
        .of_kind(SCC_GROUP, "SecurityContextConstraints")
        .any(|scc| {
            let names = |key: &'static str| {
                scc.get(&[PathStep::Key(key)])
                    .map(Node::items)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Node::as_str)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            };
            names("users").contains(&user) || names("groups").iter().any(|g| groups.contains(g))
        });
    if listed {
        return true;
    }
    workspace.objects.iter().any(|binding| {
        let cluster_wide = binding.is(RBAC_GROUP, "ClusterRoleBinding");
        if !cluster_wide && !binding.is(RBAC_GROUP, "RoleBinding") {
            return false;
        }
        let home = binding.namespace_or_default();
        if !cluster_wide && home != namespace {
            return false;
        }
        let bound = binding
            .get(&[PathStep::Key("subjects")])
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .any(|subject| subject_is(subject, namespace, account, home));
        if !bound {
            return false;
        }
        let role_kind = binding.str_at(&[PathStep::Key("roleRef"), PathStep::Key("kind")]);
        let role_name = binding
            .str_at(&[PathStep::Key("roleRef"), PathStep::Key("name")])
            .unwrap_or("");
        if role_name.starts_with(SCC_ROLE_PREFIX) {
            return true;
        }
        workspace.objects.iter().any(|role| {
            let kind_matches = match role_kind {
                Some("ClusterRole") => role.is(RBAC_GROUP, "ClusterRole"),
                Some("Role") => role.is(RBAC_GROUP, "Role") && role.namespace_or_default() == home,
                _ => false,
            };
            kind_matches && role.name == role_name && role_grants_use(role)
        })
    })
}

declare_rule! {
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
    for template in pod_templates(workspace) {
        let beyond = beyond_restricted_v2(template);
        let Some(first) = beyond.first() else {
            continue;
        };
        let namespace = template.object.namespace_or_default();
        let account = service_account(template);
        if granted_an_scc(workspace, namespace, account) {
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
