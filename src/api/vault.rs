//! `/api/vault` endpoints. Placeholder until issue #4 lands: every route answers 404.

use crate::api::{Reply, Req};
use crate::error::ApiError;
use crate::state::AppState;

// TODO #4: implement.
pub fn status(_state: &AppState) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #4: implement.
pub fn unlock(_state: &AppState, _req: &Req) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #4: implement.
pub fn lock(_state: &AppState) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #4: implement.
pub fn set_password(_state: &AppState, _req: &Req) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}

// TODO #4: implement.
pub fn remove_password(_state: &AppState, _req: &Req) -> Result<Reply, ApiError> {
    Err(ApiError::NotFound)
}
