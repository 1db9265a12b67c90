//! `/api/keys` endpoints. Placeholder until issue #7 lands: every route answers 404.

use crate::api::{Reply, Req};
use crate::error::ApiError;
use crate::state::AppState;

// TODO #7: implement.
pub fn list(_state: &AppState) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #7: implement.
pub fn create(_state: &AppState, _req: &Req) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #7: implement.
pub fn get(_state: &AppState, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #7: implement.
pub fn update(_state: &AppState, _req: &Req, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #7: implement.
pub fn delete(_state: &AppState, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}
