//! Images through the OCI distribution API.
