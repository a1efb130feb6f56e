//! The core as a wasm component behaves exactly like the core linked natively, inside a sandbox
//! that grants it nothing, and a trap costs one instance, never the session.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use airlock_core::testkit::{self, Backend, Core, Native, Restored};
use airlock_core::{Config, Input, Output};
use airlock_sandbox::core_host::{CoreError, CoreHost, WasmCore};

/// One compiled host for the tests that need no special settings.
fn host() -> &'static CoreHost {
    static HOST: OnceLock<CoreHost> = OnceLock::new();
    HOST.get_or_init(|| {
        CoreHost::new(Some(&airlock_tests::gateway::compiled_cache()))
            .expect("the embedded core loads")
    })
}

/// The testkit's [`Backend`] over wasm instances.
struct Wasm<'h>(&'h CoreHost);

/// A [`WasmCore`] as a testkit [`Core`]; the testkit's `snapshot` takes `&self`.
struct WasmSession(RefCell<WasmCore>);

impl Core for WasmSession {
    fn handle(&mut self, input: Input, now: u64) -> Vec<Output> {
        self.0.get_mut().handle(input, now).expect("the wasm core handles the input")
    }

    fn snapshot(&self) -> String {
        self.0.borrow_mut().snapshot().expect("the wasm core takes a snapshot")
    }

    fn waiting_state(&self) -> Option<String> {
        self.0.borrow_mut().waiting_state().expect("the wasm core answers its waiting state")
    }
}

impl Backend for Wasm<'_> {
    fn create(&self, config: Config, now: u64) -> Box<dyn Core> {
        Box::new(WasmSession(RefCell::new(
            self.0.create(&config, now).expect("the wasm core starts"),
        )))
    }

    fn restore(&self, config: Config, snapshot: Option<&str>, events: &[String]) -> Restored {
        let core = match snapshot {
            Some(snapshot) => self.0.restore_from(&config, snapshot, events),
            None => self.0.restore(&config, events),
        };
        Ok(Box::new(WasmSession(RefCell::new(core.map_err(|e| e.to_string())?))))
    }

    fn wake_from(
        &self,
        config: Config,
        snapshot: &str,
        events: &[String],
        waiting: &str,
    ) -> Restored {
        let core = self.0.wake_from(&config, snapshot, events, waiting);
        Ok(Box::new(WasmSession(RefCell::new(core.map_err(|e| e.to_string())?))))
    }
}

#[test]
fn core_component_imports_no_clock_random_filesystem_or_socket() {
    // Built apart from `host()`: a host refuses such a core, and the refusal lists every import.
    let host = match CoreHost::new(Some(&airlock_tests::gateway::compiled_cache())) {
        Ok(host) => host,
        Err(CoreError::ForbiddenImports { forbidden, imports }) => {
            panic!("forbidden imports {forbidden:?}; all imports: {imports:#?}")
        }
        Err(e) => panic!("the embedded core does not load: {e}"),
    };
    let forbidden = host.forbidden_imports();
    assert!(
        forbidden.is_empty(),
        "forbidden imports {forbidden:?}; all imports: {:#?}",
        host.imports()
    );
    assert!(
        host.imports().iter().all(|name| name.starts_with("wasi:cli/")
            || name.starts_with("wasi:io/")
            || name.starts_with("airlock:core/")),
        "the core imports only std's cli and io interfaces: {:#?}",
        host.imports()
    );
}

#[test]
fn wasm_and_native_logs_are_byte_identical() {
    let wasm = Wasm(host());
    for (name, scenario) in testkit::SCENARIOS {
        let run = |backend: &dyn Backend, which: &str| {
            catch_unwind(AssertUnwindSafe(|| scenario(backend))).unwrap_or_else(|_| {
                panic!("scenario `{name}` panicked on the {which} backend (see above)")
            })
        };
        let native_log = run(&Native, "native");
        let wasm_log = run(&wasm, "wasm");
        assert_eq!(
            native_log, wasm_log,
            "scenario `{name}`: the wasm log differs from the native one"
        );
    }
}

/// Appends the events among `outputs` to `log`.
fn record(log: &mut Vec<String>, outputs: Vec<Output>) {
    log.extend(outputs.into_iter().filter_map(|o| match o {
        Output::AppendEvent(appended) => Some(appended.json),
        _ => None,
    }));
}

#[test]
fn trap_is_reported_and_instance_is_never_reused() {
    let host = host();
    let config = testkit::config();
    let mut now = testkit::START;
    let mut core = host.create(&config, now).unwrap();
    let mut log = Vec::new();
    let send = |id: &str| Input::Send {
        message: testkit::user(id, "hello"),
        target: airlock_core::Target::NextTurn,
        wakeup: true,
    };
    now += 1;
    record(&mut log, core.handle(send("m1"), now).unwrap());
    assert!(!log.is_empty(), "a followup writes events");
    let before = core.snapshot().unwrap();

    core.set_fuel(1_000);
    now += 1;
    let err = core.handle(send("m2"), now).unwrap_err();
    assert!(matches!(err, CoreError::Trapped { call: "handle", out_of_fuel: true, .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("fuel") && message.contains("rebuilt from its log"), "{message}");
    assert!(core.is_poisoned());

    // Never re-entered, even with fuel to spare.
    core.set_fuel(airlock_sandbox::core_host::DEFAULT_FUEL);
    assert!(matches!(core.handle(send("m3"), now + 1), Err(CoreError::Poisoned)));
    assert!(matches!(core.snapshot(), Err(CoreError::Poisoned)));

    let mut restored = host.restore(&config, &log).expect("the log restores");
    assert_eq!(
        restored.snapshot().unwrap(),
        before,
        "the restored session is the one before the trap"
    );
    now += 1;
    record(&mut log, restored.handle(send("m2"), now).unwrap());
    assert!(!restored.is_poisoned());
}

#[test]
fn compiled_code_is_cached_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let first = CoreHost::new(Some(dir.path())).unwrap();
    assert!(!first.loaded_from_cache(), "an empty cache dir has nothing to load");
    let file = first.cache_file().expect("a cache dir gives a cache file").to_owned();
    assert!(file.is_file(), "{} was written", file.display());
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("core-") && name.ends_with(".cwasm"), "{name}");

    let second = CoreHost::new(Some(dir.path())).unwrap();
    assert!(second.loaded_from_cache(), "the second host loads {name}");
    assert_eq!(second.cache_file(), Some(file.as_path()));
    let mut core = second.create(&testkit::config(), testkit::START).unwrap();
    core.snapshot().expect("code loaded from the cache runs");
    // The loaded code is mapped from the file: unmap it before damaging the file in place.
    drop((core, second, first));

    // A damaged file is recompiled and replaced, not trusted.
    std::fs::write(&file, b"not machine code").unwrap();
    let third = CoreHost::new(Some(dir.path())).unwrap();
    assert!(!third.loaded_from_cache());
    assert!(
        CoreHost::new(Some(dir.path())).unwrap().loaded_from_cache(),
        "the replaced file loads"
    );
}
