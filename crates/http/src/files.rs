//! `/v1/sessions/{id}/files`: a session's workspace, the directory its code tools see as
//! `/workspace`. A client lists it, downloads a file, uploads one for the code to read (bounded
//! by the request body limit and the tenant's workspace quota), or removes one. Disposing of the
//! session deletes its workspace; a fork starts with an empty one.
//!
//! A file comes with a content type by its extension and as an attachment, sandboxed and never
//! sniffed: it was written by code a model wrote, so a browser must not run it as this origin's
//! page.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::{Disposed, NoSession, StorageFailed, errors};
use super::{Answer, ApiError, AppState, SessionId};
use airlock_providers::tools::{Workspace, WorkspaceError, WorkspaceFile};

/// The file routes (paths in the annotations; `{*path}` takes the rest of the path, `/`s and all).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(download, upload, remove))
}

/// A file in a session's workspace.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FileView {
    /// Its path in the workspace, `/`-separated (code sees it under `/workspace/`).
    path: String,
    /// Its size.
    bytes: u64,
    /// When it was last changed, in milliseconds since the Unix epoch.
    modified_at: u64,
}

impl From<WorkspaceFile> for FileView {
    fn from(file: WorkspaceFile) -> FileView {
        FileView { path: file.path, bytes: file.bytes, modified_at: file.modified_ms }
    }
}

/// A session's workspace.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FilesView {
    /// Its files (not directories or links), by path.
    items: Vec<FileView>,
    /// What it is charged against the quota: each file rounded up to 4 KiB, each directory and
    /// link 4 KiB.
    charged_bytes: u64,
    /// What the workspaces of all the tenant's sessions may hold together.
    quota_bytes: u64,
}

/// A file's path in the workspace.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // read by the routes from the path; here for the document
struct FilePath {
    /// The file's path in the workspace, `/`-separated (`data/input.csv`); no `.`, `..` or
    /// empty names.
    path: String,
}

/// The refusals of a file route: 400, 404, 507.
struct FileRefused;

impl utoipa::IntoResponses for FileRefused {
    fn responses()
    -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
        errors(&[
            ("400", "`bad-request`: the path is not a plain relative path in the workspace"),
            (
                "404",
                "`session-not-found`, `file-not-found`, or `no-workspaces` (the gateway keeps \
                 none: `--workspaces off`)",
            ),
            (
                "507",
                "`workspace-full`: the tenant's workspaces would hold more than the quota; \
                 details give `quotaBytes`, `usedBytes`, `wantedBytes`",
            ),
        ])
    }
}

/// Runs `work` on the workspace off the async workers (it reads and writes files).
async fn blocking<T: Send + 'static>(
    workspace: Workspace,
    work: impl FnOnce(&Workspace) -> Result<T, WorkspaceError> + Send + 'static,
) -> Answer<T> {
    let done = tokio::task::spawn_blocking(move || work(&workspace)).await;
    let done = done.map_err(|e| WorkspaceError::Io(std::io::Error::other(e.to_string())));
    Ok(done??)
}

/// The files of a session's workspace.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/files", operation_id = "listFiles", tag = "files",
    params(SessionId),
    responses(
        (status = 200, description = "Its files", body = FilesView),
        NoSession, Disposed, FileRefused, StorageFailed,
    )
)]
async fn list(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Json<FilesView>> {
    let workspace = state.sessions.workspace(&id).await?;
    let quota_bytes = workspace.quota();
    let scan = blocking(workspace, |w| Ok(w.scan()?)).await?;
    Ok(Json(FilesView {
        items: scan.files.into_values().map(FileView::from).collect(),
        charged_bytes: scan.charged,
        quota_bytes,
    }))
}

/// Downloads a file of a session's workspace, byte for byte, as an attachment with a content
/// type by its extension.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/files/{*path}", operation_id = "downloadFile", tag = "files",
    params(SessionId, FilePath),
    responses(
        (status = 200, description = "The file", content_type = "application/octet-stream", body = Vec<u8>),
        NoSession, Disposed, FileRefused, StorageFailed,
    )
)]
async fn download(
    State(state): State<AppState>,
    Path((id, path)): Path<(String, String)>,
) -> Answer<Response> {
    let workspace = state.sessions.workspace(&id).await?;
    let opened = path.clone();
    let (file, bytes) = blocking(workspace, move |w| w.open_file(&opened)).await?;
    let body =
        Body::from_stream(tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file)));
    let kind = mime_guess::from_path(&path).first_or_octet_stream();
    let headers = [
        (header::CONTENT_TYPE, header_value(kind.essence_str())),
        (header::CONTENT_LENGTH, HeaderValue::from(bytes)),
        (header::CONTENT_DISPOSITION, attachment(&path)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox")),
    ];
    Ok((headers, body).into_response())
}

/// Uploads a file into a session's workspace for its code to read (the body is the file, of any
/// type, up to the request body limit), replacing one at the same path.
#[utoipa::path(
    put, path = "/v1/sessions/{id}/files/{*path}", operation_id = "uploadFile", tag = "files",
    params(SessionId, FilePath),
    request_body(content = Option<Vec<u8>>, content_type = "application/octet-stream", description = "The file's bytes (none: an empty file)"),
    responses(
        (status = 200, description = "The file as stored", body = FileView),
        (status = 413, description = "`payload-too-large`: over the request body limit (`--max-body`)", body = super::ErrorBody),
        NoSession, Disposed, FileRefused, StorageFailed,
    )
)]
async fn upload(
    State(state): State<AppState>,
    Path((id, path)): Path<(String, String)>,
    body: Bytes,
) -> Answer<Json<FileView>> {
    let workspace = state.sessions.workspace(&id).await?;
    let file = blocking(workspace, move |w| w.write(&path, &body)).await?;
    Ok(Json(file.into()))
}

/// Removes a file from a session's workspace.
#[utoipa::path(
    delete, path = "/v1/sessions/{id}/files/{*path}", operation_id = "removeFile", tag = "files",
    params(SessionId, FilePath),
    responses(
        (status = 204, description = "Removed"),
        NoSession, Disposed, FileRefused, StorageFailed,
    )
)]
async fn remove(
    State(state): State<AppState>,
    Path((id, path)): Path<(String, String)>,
) -> Answer<StatusCode> {
    let workspace = state.sessions.workspace(&id).await?;
    blocking(workspace, move |w| w.remove(&path)).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static("application/octet-stream"))
}

/// What RFC 5987 lets stand unescaped in `filename*`.
const ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `attachment` with the file's name: plain ASCII in `filename` (anything else as `_`), exact
/// in `filename*`.
fn attachment(path: &str) -> HeaderValue {
    let name = path.rsplit('/').next().unwrap_or(path);
    let plain: String = name
        .chars()
        .map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' })
        .collect();
    let exact = utf8_percent_encode(name, ATTR_CHAR);
    header_value(&format!("attachment; filename=\"{plain}\"; filename*=UTF-8''{exact}"))
}

impl From<WorkspaceError> for ApiError {
    fn from(error: WorkspaceError) -> Self {
        match &error {
            WorkspaceError::BadPath(_) => ApiError::bad_request("path", error.to_string()),
            WorkspaceError::NotFound(_) => ApiError::not_found("file-not-found", error.to_string()),
            WorkspaceError::Full { quota, used, wanted } => {
                let details = serde_json::json!({
                    "quotaBytes": quota, "usedBytes": used, "wantedBytes": wanted,
                });
                ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "workspace-full", error.to_string())
                    .details(details)
            }
            WorkspaceError::Io(_) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "workspace-failed",
                error.to_string(),
            ),
        }
    }
}
