//! `${…}` scanner (kro semantics).
