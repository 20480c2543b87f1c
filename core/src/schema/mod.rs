//! SimpleSchema → OpenAPI, defaulting and validation of instances.
