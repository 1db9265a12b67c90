//! `GET /api/openapi.json`. Placeholder until issue #10 lands.

use crate::api::Reply;
use crate::error::ApiError;

// TODO #10: serve the OpenAPI document.
pub fn get() -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}
