//! `/api/hosts` endpoints. Placeholder until issue #5 lands: every route answers 404.

use crate::api::{Reply, Req};
use crate::error::ApiError;
use crate::state::AppState;

// TODO #5: implement.
pub fn list(_state: &AppState, _req: &Req) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #5: implement.
pub fn create(_state: &AppState, _req: &Req) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #5: implement.
pub fn get(_state: &AppState, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #5: implement.
pub fn update(_state: &AppState, _req: &Req, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #5: implement.
pub fn delete(_state: &AppState, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #5: implement.
pub fn toggle_favorite(_state: &AppState, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #5: implement.
pub fn move_to(_state: &AppState, _req: &Req, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #5: implement.
pub fn connect(_state: &AppState, _id: &str) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}
