//! Whether the CPU's counter can stamp events: the gate in front of
//! [`ClockSource::Tsc`](super::ClockSource::Tsc).
//!
//! The counter is trusted where the kernel trusts it, the rule NIXL applies before it
//! uses its cycle-counter stopwatch:
//!
//! - x86-64: the CPU reports an invariant TSC (CPUID leaf `0x8000_0007`, EDX bit 8:
//!   the TSC ticks at a constant rate in every power state and does not stop) **and**
//!   the kernel's clocksource is `tsc`
//!   (`/sys/devices/system/clocksource/clocksource0/current_clocksource`). The kernel
//!   drops `tsc` as its clocksource when it finds the counters of two CPUs out of step
//!   or the counter unstable, so the second check also covers what the first cannot
//!   see (unsynchronised sockets, a hypervisor that migrates the guest badly);
//! - AArch64: the kernel's clocksource is `arch_sys_counter` (the generic timer that
//!   `CNTVCT_EL0` reads);
//! - anywhere else the counter is not used.
//!
//! A [`ClockProbe`] holds the two facts. [`ClockProbe::system`] reads them from this
//! machine (once per process); tests and programs that know better inject their own
//! through [`TelemetryBuilder::clock_probe`](crate::TelemetryBuilder::clock_probe).

use std::fmt;
use std::sync::OnceLock;

/// Where the kernel names its clocksource.
pub const CLOCKSOURCE_PATH: &str =
    "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/// What decides whether the CPU counter can stamp events.
///
/// ```
/// use telering_std::clock::ClockProbe;
/// let good = ClockProbe { invariant_tsc: true, clocksource: Some("tsc".into()) };
/// let hpet = ClockProbe { invariant_tsc: true, clocksource: Some("hpet".into()) };
/// if cfg!(target_arch = "x86_64") {
///     assert!(good.counter_reliable().is_ok());
/// }
/// let why = hpet.counter_reliable().unwrap_err();
/// assert!(why.to_string().contains("hpet"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockProbe {
    /// The CPU reports an invariant (constant-rate, non-stop) TSC. Ignored off x86-64.
    pub invariant_tsc: bool,
    /// The kernel's current clocksource, if it could be read.
    pub clocksource: Option<String>,
}

/// Why the counter is not used: the text names what was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterUnreliable {
    reason: String,
}

impl fmt::Display for CounterUnreliable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for CounterUnreliable {}

/// The clocksource the kernel uses when the counter is sound on this architecture.
const TRUSTED_CLOCKSOURCE: Option<&str> = if cfg!(target_arch = "x86_64") {
    Some("tsc")
} else if cfg!(target_arch = "aarch64") {
    Some("arch_sys_counter")
} else {
    None
};

impl ClockProbe {
    /// This machine's facts, read once per process: CPUID and [`CLOCKSOURCE_PATH`].
    ///
    /// ```
    /// use telering_std::clock::ClockProbe;
    /// // Read once per process: the same facts every time.
    /// assert_eq!(ClockProbe::system(), ClockProbe::system());
    /// ```
    pub fn system() -> ClockProbe {
        static SYSTEM: OnceLock<ClockProbe> = OnceLock::new();
        SYSTEM
            .get_or_init(|| ClockProbe {
                invariant_tsc: invariant_tsc(),
                clocksource: std::fs::read_to_string(CLOCKSOURCE_PATH)
                    .ok()
                    .map(|s| s.trim().to_string()),
            })
            .clone()
    }

    /// Facts under which the counter is trusted on this architecture (an invariant
    /// TSC, the kernel's counter clocksource), whatever this machine reports: for
    /// tests and benchmarks that force the counter clock (`TELERING_CLOCK=tsc`), for
    /// example under valgrind, whose emulated CPU reports no invariant TSC.
    ///
    /// ```
    /// use telering_std::clock::ClockProbe;
    /// let trusting = ClockProbe::trusting_counter();
    /// assert_eq!(trusting.counter_reliable().is_ok(), cfg!(any(target_arch = "x86_64", target_arch = "aarch64")));
    /// ```
    pub fn trusting_counter() -> ClockProbe {
        ClockProbe {
            invariant_tsc: true,
            clocksource: TRUSTED_CLOCKSOURCE.map(str::to_string),
        }
    }

    /// `Ok` when the counter may stamp events, else why not.
    ///
    /// ```
    /// use telering_std::clock::ClockProbe;
    /// let hpet = ClockProbe { invariant_tsc: true, clocksource: Some("hpet".into()) };
    /// let e = hpet.counter_reliable().unwrap_err();
    /// assert!(!e.to_string().is_empty());
    /// ```
    pub fn counter_reliable(&self) -> Result<(), CounterUnreliable> {
        let unreliable = |reason: String| Err(CounterUnreliable { reason });
        let Some(trusted) = TRUSTED_CLOCKSOURCE else {
            return unreliable(format!(
                "no CPU counter is supported on {}",
                std::env::consts::ARCH
            ));
        };
        if cfg!(target_arch = "x86_64") && !self.invariant_tsc {
            return unreliable("the CPU does not report an invariant TSC".to_string());
        }
        match self.clocksource.as_deref() {
            Some(s) if s == trusted => Ok(()),
            Some(s) => unreliable(format!(
                "the kernel clocksource is `{s}`, not `{trusted}` ({CLOCKSOURCE_PATH})"
            )),
            None => unreliable(format!("{CLOCKSOURCE_PATH} could not be read")),
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    raw_cpuid::CpuId::new()
        .get_advanced_power_mgmt_info()
        .is_some_and(|apm| apm.has_invariant_tsc())
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(invariant_tsc: bool, clocksource: Option<&str>) -> ClockProbe {
        ClockProbe {
            invariant_tsc,
            clocksource: clocksource.map(str::to_string),
        }
    }

    #[test]
    fn the_counter_needs_the_trusted_clocksource() {
        let Some(trusted) = TRUSTED_CLOCKSOURCE else {
            assert!(probe(true, Some("tsc")).counter_reliable().is_err());
            return;
        };
        assert_eq!(probe(true, Some(trusted)).counter_reliable(), Ok(()));
        let e = probe(true, Some("kvm-clock"))
            .counter_reliable()
            .unwrap_err();
        assert!(e.to_string().contains("`kvm-clock`"), "{e}");
        let e = probe(true, None).counter_reliable().unwrap_err();
        assert!(e.to_string().contains(CLOCKSOURCE_PATH), "{e}");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_tsc_must_be_invariant() {
        let e = probe(false, Some("tsc")).counter_reliable().unwrap_err();
        assert!(e.to_string().contains("invariant TSC"), "{e}");
    }

    #[test]
    fn the_system_probe_reads_the_kernel_clocksource() {
        let expected = std::fs::read_to_string(CLOCKSOURCE_PATH)
            .ok()
            .map(|s| s.trim().to_string());
        assert_eq!(ClockProbe::system().clocksource, expected);
    }
}
