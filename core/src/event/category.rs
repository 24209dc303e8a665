//! The eight event categories and the decoding of a category field read from memory.

use core::fmt;

/// What an event is about. The discriminants are NIXL's and travel on the wire as `i32`.
///
/// ```
/// use telering_core::Category;
/// assert_eq!(Category::Transfer as i32, 1);
/// assert_eq!(Category::try_from(4), Ok(Category::Error));
/// assert_eq!(Category::Memory.to_string(), "NIXL_TELEMETRY_MEMORY");
/// assert_eq!(Category::Memory.short_name(), "MEMORY");
/// ```
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Memory registration and deregistration.
    Memory = 0,
    /// Bytes and requests moved.
    Transfer = 1,
    /// Connections made and lost.
    Connection = 2,
    /// Events a transfer backend reports about itself.
    Backend = 3,
    /// Error counts, one event per status.
    Error = 4,
    /// Latencies and other performance figures.
    Performance = 5,
    /// The telemetry system itself and its host.
    System = 6,
    /// Anything the program defines.
    Custom = 7,
}

impl Category {
    /// All categories in discriminant order.
    pub const ALL: [Category; 8] = [
        Category::Memory,
        Category::Transfer,
        Category::Connection,
        Category::Backend,
        Category::Error,
        Category::Performance,
        Category::System,
        Category::Custom,
    ];

    /// The name NIXL uses, such as `NIXL_TELEMETRY_TRANSFER`.
    ///
    /// ```
    /// use telering_core::Category;
    /// assert_eq!(Category::Performance.nixl_name(), "NIXL_TELEMETRY_PERFORMANCE");
    /// ```
    pub const fn nixl_name(self) -> &'static str {
        match self {
            Category::Memory => "NIXL_TELEMETRY_MEMORY",
            Category::Transfer => "NIXL_TELEMETRY_TRANSFER",
            Category::Connection => "NIXL_TELEMETRY_CONNECTION",
            Category::Backend => "NIXL_TELEMETRY_BACKEND",
            Category::Error => "NIXL_TELEMETRY_ERROR",
            Category::Performance => "NIXL_TELEMETRY_PERFORMANCE",
            Category::System => "NIXL_TELEMETRY_SYSTEM",
            Category::Custom => "NIXL_TELEMETRY_CUSTOM",
        }
    }

    /// The name without its `NIXL_TELEMETRY_` prefix, such as `TRANSFER`.
    ///
    /// ```
    /// use telering_core::Category;
    /// assert_eq!(Category::Backend.short_name(), "BACKEND");
    /// ```
    pub fn short_name(self) -> &'static str {
        &self.nixl_name()["NIXL_TELEMETRY_".len()..]
    }

    /// Parses either form of the name (`TRANSFER` or `NIXL_TELEMETRY_TRANSFER`),
    /// ignoring ASCII case.
    ///
    /// ```
    /// use telering_core::Category;
    /// assert_eq!(Category::from_name("transfer"), Some(Category::Transfer));
    /// assert_eq!(Category::from_name("NIXL_TELEMETRY_ERROR"), Some(Category::Error));
    /// assert_eq!(Category::from_name("bogus"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| {
            c.nixl_name().eq_ignore_ascii_case(name) || c.short_name().eq_ignore_ascii_case(name)
        })
    }
}

impl TryFrom<i32> for Category {
    type Error = UnknownCategory;

    /// Decodes a category read from memory; values outside 0..=7 are an error, never a
    /// transmute.
    #[inline]
    fn try_from(raw: i32) -> Result<Self, UnknownCategory> {
        match raw {
            0 => Ok(Category::Memory),
            1 => Ok(Category::Transfer),
            2 => Ok(Category::Connection),
            3 => Ok(Category::Backend),
            4 => Ok(Category::Error),
            5 => Ok(Category::Performance),
            6 => Ok(Category::System),
            7 => Ok(Category::Custom),
            other => Err(UnknownCategory(other)),
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.nixl_name())
    }
}

/// A category value outside NIXL's 0..=7, read from memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownCategory(pub i32);

impl fmt::Display for UnknownCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown event category {} (valid categories are 0 to 7)",
            self.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_round_trips_and_unknown_values_are_errors() {
        for c in Category::ALL {
            assert_eq!(Category::try_from(c as i32), Ok(c));
            assert_eq!(Category::from_name(c.short_name()), Some(c));
        }
        for raw in [-1, 8, i32::MIN, i32::MAX] {
            assert_eq!(Category::try_from(raw), Err(UnknownCategory(raw)));
        }
    }
}
