//! Pre-resolved custom events: [`CustomEvent`], made by [`Telemetry::custom_event`] or,
//! for a literal name checked at compile time, the [`custom_event!`](crate::custom_event)
//! macro.
//!
//! [`Telemetry::record`] checks the name and runs the allowlist on every call. A
//! [`CustomEvent`] does both once, when it is made, and takes the id its lane records
//! carry then, so recording through it costs what a built-in metric costs: one flag
//! test, a clock read, a push into the thread's lane.
//! It borrows the [`Telemetry`] it was made from, so it can never record into another
//! instance or outlive its own.

use crate::Recorded;
use crate::Telemetry;
use telering_core::{Category, EventName, NameError};

/// A custom event whose name and allowlist verdict were resolved once.
///
/// ```
/// use telering_core::Category;
/// use telering_std::{Recorded, Telemetry};
/// let telemetry = Telemetry::builder("a")
///     .enabled(true)
///     .exporter("nop")
///     .enabled_metrics("queue_*")
///     .build()
///     .unwrap();
/// let depth = telemetry.custom_event(Category::Custom, "queue_depth").unwrap();
/// assert_eq!(depth.record(17), Recorded::Written);
/// let other = telemetry.custom_event(Category::Custom, "other").unwrap();
/// assert_eq!(other.record(1), Recorded::Filtered);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CustomEvent<'t> {
    telemetry: &'t Telemetry,
    category: Category,
    name: EventName,
    allowed: bool,
    /// The id of `(name, category)` in the telemetry's name table; `None` if the
    /// table was full (every event is then counted as dropped) or the event is not
    /// allowed.
    id: Option<u16>,
}

impl<'t> CustomEvent<'t> {
    pub(crate) fn new(telemetry: &'t Telemetry, category: Category, name: EventName) -> Self {
        let allowed = telemetry.shared.filter.allows(&name);
        let id = if allowed {
            telemetry.shared.names.intern(&name, category)
        } else {
            None
        };
        CustomEvent {
            allowed,
            id,
            telemetry,
            category,
            name,
        }
    }

    /// Records one event with `value`.
    ///
    /// ```
    /// use telering_core::Category;
    /// use telering_std::Recorded;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let peers = telering_std::custom_event!(telemetry, Category::Connection, "peers_connected");
    /// assert_eq!(peers.record(3), Recorded::Written);
    /// ```
    #[inline]
    pub fn record(&self, value: u64) -> Recorded {
        if !self.allowed {
            return self.telemetry.shared.filter.refusal();
        }
        let Some(id) = self.id else {
            return self.telemetry.shared.outcome(None, 1);
        };
        let now = self.telemetry.shared.stamper.stamp();
        self.telemetry.push_record(id, now, value)
    }

    /// Whether the allowlist lets this event through (and telemetry exports at all):
    /// when `false`, [`record`](Self::record) does nothing and returns why
    /// ([`Recorded::Filtered`], [`Recorded::Disabled`] or [`Recorded::CaptureOnly`]).
    ///
    /// ```
    /// use telering_core::Category;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::disabled("a");
    /// assert!(!telemetry.custom_event(Category::Custom, "x").unwrap().enabled());
    /// ```
    pub fn enabled(&self) -> bool {
        self.allowed
    }

    /// The event's name.
    ///
    /// ```
    /// use telering_core::Category;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::disabled("a");
    /// let e = telemetry.custom_event(Category::Custom, "x").unwrap();
    /// assert_eq!(e.name().as_str(), "x");
    /// ```
    pub fn name(&self) -> &EventName {
        &self.name
    }

    /// The event's category.
    ///
    /// ```
    /// use telering_core::Category;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::disabled("a");
    /// let e = telemetry.custom_event(Category::Memory, "x").unwrap();
    /// assert_eq!(e.category(), Category::Memory);
    /// ```
    pub fn category(&self) -> Category {
        self.category
    }
}

impl Telemetry {
    /// A handle that records the custom event `name` in `category`: the name (1 to 31
    /// bytes, no NUL or control character) is checked and the allowlist evaluated
    /// now, once. See [`CustomEvent`]; for a literal name,
    /// [`custom_event!`](crate::custom_event) checks it at compile time instead.
    ///
    /// ```
    /// use telering_core::Category;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::disabled("a");
    /// assert!(telemetry.custom_event(Category::Custom, "").is_err());
    /// ```
    pub fn custom_event(
        &self,
        category: Category,
        name: &str,
    ) -> Result<CustomEvent<'_>, NameError> {
        Ok(CustomEvent::new(self, category, EventName::new(name)?))
    }

    /// [`custom_event`](Self::custom_event) for a name checked beforehand, such as
    /// one made with [`event_name!`](telering_core::event_name); it cannot fail.
    ///
    /// ```
    /// use telering_core::{event_name, Category};
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::disabled("a");
    /// let e = telemetry.custom_event_named(Category::Custom, event_name!("queue_depth"));
    /// assert_eq!(e.name().as_str(), "queue_depth");
    /// ```
    pub fn custom_event_named(&self, category: Category, name: EventName) -> CustomEvent<'_> {
        CustomEvent::new(self, category, name)
    }
}

/// A [`CustomEvent`] for a literal name, checked at compile time: a name that is
/// empty, longer than 31 bytes or contains a NUL or a control character fails the
/// build.
///
/// ```
/// use telering_core::Category;
/// use telering_std::Recorded;
/// use telering_std::{custom_event, Telemetry};
/// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
/// let retries = custom_event!(telemetry, Category::Error, "rdma_retries");
/// assert_eq!(retries.record(1), Recorded::Written);
/// ```
///
/// ```compile_fail
/// use telering_core::Category;
/// use telering_std::{custom_event, Telemetry};
/// let telemetry = Telemetry::disabled("a");
/// let e = custom_event!(telemetry, Category::Custom, "a_name_far_longer_than_thirty_one_bytes");
/// ```
#[macro_export]
macro_rules! custom_event {
    ($telemetry:expr, $category:expr, $name:literal) => {
        $telemetry.custom_event_named($category, $crate::__event_name!($name))
    };
}

#[doc(hidden)]
pub use telering_core::event_name as __event_name;
