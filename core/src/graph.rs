//! Dependency graph: stable topological order and cycle detection.
