//! The calls a push makes besides the distribution API's uploads: the login check (`/v2/`
//! with the credentials) and Harbor's project API.
//!
//! KubeKey creates Harbor projects and ignores what Harbor answers; kk reports every answer
//! that is neither "there" nor "created", naming the project, so a name Harbor refuses is
//! said before a push fails on it with a less telling `404`.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;

use super::{PushError, PushTarget};

/// How long one API call may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A registry's API on `https://HOST`, with the target's CA and credentials.
#[derive(Debug)]
pub struct Registry<'a> {
    target: &'a PushTarget,
    client: reqwest::Client,
    base: String,
}

/// What [`Registry::ensure_projects`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HarborProjects {
    /// Projects that were there.
    pub present: Vec<String>,
    /// Projects created (private: nodes pull with the credentials).
    pub created: Vec<String>,
}

impl<'a> Registry<'a> {
    /// The API client for `target` (its CA trusted besides the system's).
    pub fn new(target: &'a PushTarget) -> Result<Self, PushError> {
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("kk-install/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(TIMEOUT);
        if let Some(path) = &target.ca_file {
            let pem = std::fs::read(path).map_err(|source| PushError::CaFile {
                path: path.clone(),
                source: Box::new(source),
            })?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem).map_err(|source| {
                PushError::CaFile {
                    path: path.clone(),
                    source: Box::new(source),
                }
            })?;
            if certificates.is_empty() {
                return Err(PushError::CaFile {
                    path: path.clone(),
                    source: "no certificate found".into(),
                });
            }
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let client = builder.build().map_err(|source| PushError::Api {
            registry: target.host.clone(),
            what: "set up a client".to_owned(),
            source,
        })?;
        let scheme = if target.plain_http { "http" } else { "https" };
        Ok(Self {
            base: format!("{scheme}://{}", target.host),
            target,
            client,
        })
    }

    /// Checks that the registry accepts the credentials (or needs none): `GET /v2/` with them,
    /// and where the registry answers with a token service (Harbor, Docker Hub), a token asked
    /// for with them. A refusal is [`PushError::Unauthorized`], naming the registry and user.
    pub async fn login(&self) -> Result<(), PushError> {
        self.target.check()?;
        let url = format!("{}/v2/", self.base);
        let response = self.send(self.client.get(&url), "reach /v2/").await?;
        match response.status() {
            status if status.is_success() => Ok(()),
            StatusCode::UNAUTHORIZED => {
                let challenge = response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                match token_url(&challenge) {
                    Some(token) if self.target.credentials.is_some() => self.token(&token).await,
                    _ => Err(self.unauthorized()),
                }
            }
            StatusCode::FORBIDDEN => Err(self.unauthorized()),
            status => Err(PushError::ApiStatus {
                registry: self.target.host.clone(),
                what: "GET /v2/".to_owned(),
                status: status.as_u16(),
            }),
        }
    }

    /// Asks the token service for a token with the credentials.
    async fn token(&self, url: &str) -> Result<(), PushError> {
        let response = self
            .send(self.client.get(url), "ask the token service")
            .await?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(self.unauthorized())
        }
    }

    /// Creates every project of `projects` Harbor lacks: `GET /api/v2.0/projects/<name>`,
    /// then `POST /api/v2.0/projects` for a missing one. Any other answer is an error naming
    /// the project and Harbor's message (a bad name is `400`, a lost race `409` counts as there).
    pub async fn ensure_projects(&self, projects: &[String]) -> Result<HarborProjects, PushError> {
        let mut done = HarborProjects::default();
        for project in projects {
            let url = format!("{}/api/v2.0/projects/{project}", self.base);
            // Harbor reads a numeric path segment as a project id unless told it is a name.
            let get = self.client.get(&url).header("X-Is-Resource-Name", "true");
            let response = self.send(get, "look up a project").await?;
            match response.status() {
                status if status.is_success() => done.present.push(project.clone()),
                StatusCode::NOT_FOUND => {
                    if self.create(project).await? {
                        done.created.push(project.clone());
                    } else {
                        done.present.push(project.clone());
                    }
                }
                status => {
                    return Err(self
                        .project_error(project, "look up", status, response)
                        .await);
                }
            }
        }
        Ok(done)
    }

    /// `POST /api/v2.0/projects`; `true` when it created the project, `false` when Harbor says
    /// it exists (made meanwhile).
    async fn create(&self, project: &str) -> Result<bool, PushError> {
        let body = serde_json::json!({
            "project_name": project,
            "metadata": {"public": "false"},
        });
        let post = self
            .client
            .post(format!("{}/api/v2.0/projects", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        let response = self.send(post, "create a project").await?;
        match response.status() {
            StatusCode::CREATED | StatusCode::OK => Ok(true),
            StatusCode::CONFLICT => Ok(false),
            status => Err(self
                .project_error(project, "create", status, response)
                .await),
        }
    }

    async fn project_error(
        &self,
        project: &str,
        verb: &'static str,
        status: StatusCode,
        response: reqwest::Response,
    ) -> PushError {
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return PushError::HarborProject {
                registry: self.target.host.clone(),
                project: project.to_owned(),
                verb,
                status: status.as_u16(),
                message: "the user may not manage projects".to_owned(),
            };
        }
        let body = response.text().await.unwrap_or_default();
        PushError::HarborProject {
            registry: self.target.host.clone(),
            project: project.to_owned(),
            verb,
            status: status.as_u16(),
            message: harbor_message(&body),
        }
    }

    /// Sends `request` with the credentials, if any.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<reqwest::Response, PushError> {
        let request = match &self.target.credentials {
            Some(c) => request.basic_auth(&c.username, Some(&c.password)),
            None => request,
        };
        request.send().await.map_err(|source| PushError::Api {
            registry: self.target.host.clone(),
            what: what.to_owned(),
            source,
        })
    }

    fn unauthorized(&self) -> PushError {
        PushError::Unauthorized {
            registry: self.target.host.clone(),
            username: self.target.credentials.as_ref().map(|c| c.username.clone()),
        }
    }
}

/// The token URL of a `Bearer realm="…",service="…",scope="…"` challenge; `None` for any
/// other (a `Basic` registry takes the credentials on `/v2/` itself).
fn token_url(challenge: &str) -> Option<String> {
    let params = challenge.strip_prefix("Bearer ")?;
    let mut realm = None;
    let mut query = Vec::new();
    for part in split_params(params) {
        let (key, value) = part.split_once('=')?;
        let value = value.trim().trim_matches('"');
        match key.trim() {
            "realm" => realm = Some(value.to_owned()),
            key @ ("service" | "scope") => query.push(format!("{key}={value}")),
            _ => {}
        }
    }
    let realm = realm?;
    Some(if query.is_empty() {
        realm
    } else {
        format!("{realm}?{}", query.join("&"))
    })
}

/// The comma-separated `key="value"` pairs of a challenge (commas inside quotes kept).
fn split_params(params: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in params.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&params[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&params[start..]);
    parts
}

/// Harbor's error message (`{"errors":[{"code":…,"message":…}]}`), or the body as it is.
fn harbor_message(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    match serde_json::from_str::<Errors>(body) {
        Ok(errors) if !errors.errors.is_empty() => errors
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.code, e.message))
            .collect::<Vec<_>>()
            .join("; "),
        _ => body.trim().chars().take(300).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::{harbor_message, token_url};

    #[test]
    fn token_challenges_are_read_and_basic_ones_are_not() {
        // (challenge, token URL)
        let cases = [
            (
                r#"Bearer realm="https://harbor.local/service/token",service="harbor-registry""#,
                Some("https://harbor.local/service/token?service=harbor-registry"),
            ),
            (
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull,push""#,
                Some(
                    "https://auth.docker.io/token?service=registry.docker.io&scope=repository:a/b:pull,push",
                ),
            ),
            (
                r#"Bearer realm="https://r.local/token""#,
                Some("https://r.local/token"),
            ),
            (r#"Basic realm="Registry Realm""#, None),
            (r#"Bearer service="x""#, None),
            ("", None),
        ];
        for (challenge, url) in cases {
            assert_eq!(token_url(challenge).as_deref(), url, "{challenge}");
        }
    }

    #[test]
    fn harbor_errors_are_reported_with_their_code_and_message() {
        // (body, message)
        let cases = [
            (
                r#"{"errors":[{"code":"CONFLICT","message":"The project named docker.io already exists"}]}"#,
                "CONFLICT: The project named docker.io already exists",
            ),
            (
                r#"{"errors":[{"code":"BAD_REQUEST","message":"project_name in body should match '^[a-z0-9]+(?:[._-][a-z0-9]+)*$'"}]}"#,
                "BAD_REQUEST: project_name in body should match",
            ),
            ("  internal error\n", "internal error"),
        ];
        for (body, message) in cases {
            let got = harbor_message(body);
            assert!(got.starts_with(message), "{got} for {body}");
        }
    }
}
