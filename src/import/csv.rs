//! Shared reader piece (being built).
