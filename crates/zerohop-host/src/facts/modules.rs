//! Kernel modules: loaded (`/proc/modules`) and built in (`/sys/module`).

use std::collections::BTreeMap;

use crate::facts::{Fact, Gap};
use crate::parse::modules::parse_proc_modules;
use crate::root::HostRoot;

/// The most parameters read per module; real modules have a few dozen.
const MAX_PARAMETERS: usize = 512;

/// One kernel module.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Module {
    /// Module name with underscores (`nvidia_peermem`).
    pub name: String,
    /// Listed in `/proc/modules` (loadable and loaded); `false` for built-in code.
    pub loadable: bool,
    /// Modules that use this one, from `/proc/modules`.
    pub used_by: Vec<String>,
    /// Reference count, from `/proc/modules`.
    pub refcount: u32,
    /// The loader's state of a loadable module: `Live`, `Loading` or
    /// `Unloading` from `/proc/modules`, else `live`, `coming` or `going`
    /// from `/sys/module/<m>/initstate`; `None` for built-in code and when
    /// neither file says. `Live` means the module's `module_init` returned
    /// success: the kernel frees a module whose init fails
    /// (`do_init_module()` in `kernel/module/main.c`), so no failed module
    /// stays listed.
    pub state: Option<String>,
    /// `/sys/module/<m>/version`, when the module declares one.
    pub version: Option<String>,
    /// `/sys/module/<m>/taint`: `P` proprietary, `O` out of tree, `E` unsigned…
    pub taint: Option<String>,
    /// `/sys/module/<m>/parameters/*` that could be read.
    pub parameters: BTreeMap<String, String>,
}

/// Every module known to the kernel, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Modules(pub BTreeMap<String, Module>);

impl Modules {
    /// Reads `/proc/modules` and `/sys/module/*`. `Ok(None)` when neither exists.
    pub fn collect(root: &HostRoot) -> Fact<Modules> {
        let proc = root.read("/proc/modules").map_err(Gap::from)?;
        let sys = root.list("/sys/module").map_err(Gap::from)?;
        if proc.is_none() && sys.is_none() {
            return Ok(None);
        }
        let mut modules = BTreeMap::new();
        for line in parse_proc_modules(proc.as_deref().unwrap_or("")) {
            modules.insert(
                line.name.clone(),
                Module {
                    name: line.name,
                    loadable: true,
                    used_by: line.used_by,
                    refcount: line.refcount,
                    state: Some(line.state),
                    ..Module::default()
                },
            );
        }
        for name in sys.unwrap_or_default() {
            let dir = format!("/sys/module/{name}");
            let module = modules.entry(name.clone()).or_insert_with(|| Module {
                name: name.clone(),
                ..Module::default()
            });
            // Unreadable attributes are left out: they are optional in the
            // kernel's ABI and no check depends on a single one of them.
            module.version = root.read_value(&format!("{dir}/version")).ok().flatten();
            if module.state.is_none() {
                module.state = root
                    .read_value(&format!("{dir}/initstate"))
                    .ok()
                    .flatten()
                    .filter(|state| !state.is_empty());
            }
            module.taint = root
                .read_value(&format!("{dir}/taint"))
                .ok()
                .flatten()
                .filter(|taint| !taint.is_empty());
            if let Ok(Some(params)) = root.list(&format!("{dir}/parameters")) {
                for param in params.into_iter().take(MAX_PARAMETERS) {
                    if let Ok(Some(value)) = root.read_value(&format!("{dir}/parameters/{param}")) {
                        module.parameters.insert(param, value);
                    }
                }
            }
        }
        // `/sys/module` also lists built-in code without parameters
        // (`/sys/module/printk` …); a name there means the code is present.
        Ok(Some(Modules(modules)))
    }

    /// The module named `name` (dashes and underscores are equivalent).
    pub fn get(&self, name: &str) -> Option<&Module> {
        self.0.get(&name.replace('-', "_"))
    }

    /// Whether `name` is loaded or built in.
    pub fn present(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Whether `/proc/modules` listed the loaded modules: only then is a
    /// loadable module's absence a fact. A capture's `/sys/module` may
    /// hold only the modules someone copied.
    pub fn lists_loaded(&self) -> bool {
        self.0.values().any(|module| module.loadable)
    }
}

impl Module {
    /// Whether the loader says the module finished its `module_init`
    /// successfully (`Live` in `/proc/modules`, `live` in `initstate`):
    /// `None` when neither file gives its state.
    pub fn is_live(&self) -> Option<bool> {
        self.state
            .as_deref()
            .map(|state| state.eq_ignore_ascii_case("live"))
    }
}
