//! How large a CEL value is, for the evaluation budget: what the size limit (`value-bytes`) counts,
//! and how much work copying or traversing the value is (`eval-cost`).
//!
//! A weighing stops once it passes its caps, so it costs at most what the caps allow, never the
//! size of the value; a weight that stopped early is a lower bound that is already over a cap.

use cel::common::types::{CelBytes, CelString, Kind};
use cel::common::value::Val;
use cel::objects::Key;
use cel::Value;

/// Bytes of strings copied or scanned per unit of work.
pub(crate) const BYTES_PER_UNIT: usize = 64;

/// Values (list elements, map entries) copied or visited per unit of work: each is an allocation
/// or a dynamic call, worth a few dozen bytes of copying.
pub(crate) const ENTRIES_PER_UNIT: usize = 4;

/// The size of a value: the bytes of the strings and byte strings it holds (map keys included),
/// and its entries (list elements and map entries, through any nesting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Weight {
    pub bytes: usize,
    pub entries: usize,
}

impl Weight {
    /// A string or byte string of `n` bytes.
    pub fn bytes(n: usize) -> Self {
        Weight {
            bytes: n,
            entries: 0,
        }
    }

    /// What the size limit counts: bytes plus entries.
    pub fn total(self) -> usize {
        self.bytes.saturating_add(self.entries)
    }

    /// Units of work to copy or traverse the value once.
    pub fn work(self) -> u64 {
        (self.bytes / BYTES_PER_UNIT + self.entries / ENTRIES_PER_UNIT) as u64
    }

    fn add(&mut self, other: Weight) {
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.entries = self.entries.saturating_add(other.entries);
    }

    /// Whether this is past either cap.
    pub fn over(self, caps: Caps) -> bool {
        self.total() > caps.total || self.work() > caps.work
    }
}

/// Where a weighing may stop: once the total passes `total` or the work passes `work`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub total: usize,
    pub work: u64,
}

impl Caps {
    /// No cap: for values already known to be bounded.
    pub const NONE: Caps = Caps {
        total: usize::MAX,
        work: u64::MAX,
    };
}

/// The weight of a value as the crate's interpreter holds it (what overloads receive).
pub(crate) fn of_val(v: &dyn Val, caps: Caps) -> Weight {
    let mut w = Weight::default();
    add_val(v, &mut w, caps);
    w
}

/// The weight of each element of a list (or key of a map), but not the element's own entry: what
/// iterating it copies beyond one value per iteration, which the iteration itself pays for.
pub(crate) fn of_elements(v: &dyn Val, caps: Caps) -> Weight {
    let full = of_val(v, caps);
    let top = match v.get_type().kind() {
        Kind::List | Kind::Map => v
            .as_sizer()
            .map_or(0, |s| usize::try_from(*s.size().inner()).unwrap_or(0)),
        _ => 0,
    };
    Weight {
        bytes: full.bytes,
        entries: full.entries.saturating_sub(top),
    }
}

fn add_val(v: &dyn Val, w: &mut Weight, caps: Caps) {
    if w.over(caps) {
        return;
    }
    match v.get_type().kind() {
        Kind::String => {
            if let Some(s) = v.downcast_ref::<CelString>() {
                w.bytes = w.bytes.saturating_add(s.inner().len());
            }
        }
        Kind::Bytes => {
            if let Some(b) = v.downcast_ref::<CelBytes>() {
                w.bytes = w.bytes.saturating_add(b.inner().len());
            }
        }
        Kind::List => {
            let Some(items) = v.as_iterable() else {
                return;
            };
            let mut it = items.iter();
            while let Some(x) = it.next() {
                w.entries = w.entries.saturating_add(1);
                add_val(x, w, caps);
                if w.over(caps) {
                    return;
                }
            }
        }
        Kind::Map => {
            let (Some(keys), Some(index)) = (v.as_iterable(), v.as_indexer()) else {
                return;
            };
            let mut it = keys.iter();
            while let Some(k) = it.next() {
                w.entries = w.entries.saturating_add(1);
                add_val(k, w, caps);
                if let Ok(x) = index.get(k) {
                    add_val(x.as_ref(), w, caps);
                }
                if w.over(caps) {
                    return;
                }
            }
        }
        Kind::Opaque => {
            // An optional holds a value (`x.?f` copies it); other opaque values are small.
            if let Some(o) = v.downcast_ref::<cel::common::types::CelOptional>() {
                if let Some(inner) = o.option() {
                    add_val(inner, w, caps);
                }
            }
        }
        _ => {}
    }
}

/// [`of_val`] for a [`Value`], what kiln's library functions receive and return.
pub(crate) fn of_value(v: &Value, caps: Caps) -> Weight {
    let mut w = Weight::default();
    add_value(v, &mut w, caps);
    w
}

fn add_value(v: &Value, w: &mut Weight, caps: Caps) {
    if w.over(caps) {
        return;
    }
    match v {
        Value::String(s) => w.add(Weight::bytes(s.len())),
        Value::Bytes(b) => w.add(Weight::bytes(b.len())),
        Value::List(l) => {
            for x in l.iter() {
                w.entries = w.entries.saturating_add(1);
                add_value(x, w, caps);
                if w.over(caps) {
                    return;
                }
            }
        }
        Value::Map(m) => {
            for (k, x) in m.map.iter() {
                w.entries = w.entries.saturating_add(1);
                if let Key::String(s) = k {
                    w.bytes = w.bytes.saturating_add(s.len());
                }
                add_value(x, w, caps);
                if w.over(caps) {
                    return;
                }
            }
        }
        Value::Opaque(o) => {
            if let Some(opt) = o.downcast_ref::<cel::objects::OptionalValue>() {
                if let Some(inner) = opt.value() {
                    add_value(inner, w, caps);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::value::{to_cel, to_val};
    use serde_json::json;

    #[test]
    fn both_representations_weigh_the_same() {
        let j = json!({"ab": ["xyz", 1, {"k": "vv"}], "c": null});
        let expected = Weight {
            // keys ab, c, k; strings xyz, vv
            bytes: 2 + 1 + 1 + 3 + 2,
            // two entries at the top, three elements, one entry in the inner map
            entries: 2 + 3 + 1,
        };
        assert_eq!(of_value(&to_cel(&j), Caps::NONE), expected);
        assert_eq!(of_val(to_val(&j).as_ref(), Caps::NONE), expected);
        let list = to_val(&json!(["abc", ["d"]]));
        assert_eq!(
            of_elements(list.as_ref(), Caps::NONE),
            Weight {
                bytes: 4,
                entries: 1
            }
        );
    }

    #[test]
    fn weighing_stops_at_the_caps() {
        let big = to_val(&json!(vec!["x"; 10_000]));
        let w = of_val(
            big.as_ref(),
            Caps {
                total: 100,
                work: u64::MAX,
            },
        );
        assert!(w.total() > 100 && w.total() < 110, "{w:?}");
        let w = of_val(
            big.as_ref(),
            Caps {
                total: usize::MAX,
                work: 10,
            },
        );
        assert!(w.work() > 10 && w.work() < 13, "{w:?}");
    }
}
