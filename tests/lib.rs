//! Shared helpers for workspace-level integration tests.
