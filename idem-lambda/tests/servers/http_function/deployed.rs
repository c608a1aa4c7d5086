//! The function deployed as Lambda runs it: cargo-lambda's emulator of the Runtime API, and
//! the function in a process of its own polling it, killed when the test ends. Requests reach
//! it as API Gateway would send them: HTTP through the emulated function URL, or events
//! through the invoke API.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use idem_test_servers::lambda::TestRuntimeApi;
use serde_json::Value;

use super::function::{Setup, FUNCTION_VAR};

/// How long an invocation may take before the test fails: the function's first one waits
/// for it to start.
const INVOCATION_TIMEOUT: Duration = Duration::from_secs(60);

/// An answer of the function: status, headers (lower-cased names) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The value of header `name`, if it has one.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {self:?}"))
    }

    /// Whether the layer answered from the store.
    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }
}

/// The function, running behind its own Runtime API.
pub struct Deployed {
    api: TestRuntimeApi,
    function: Child,
    log: PathBuf,
    client: reqwest::Client,
}

impl Deployed {
    /// The emulator and the function, its layer set up as `setup` says. `None` when the
    /// emulator cannot be had (the test is then ignored).
    pub fn start(setup: Setup) -> Option<Deployed> {
        let api = TestRuntimeApi::start()?;
        let log = std::env::temp_dir().join(format!(
            "idem-lambda-http-function-{}-{}.log",
            std::process::id(),
            api.address().rsplit(':').next().unwrap_or("port")
        ));
        let output = File::create(&log).expect("the function's log file");
        let function = Command::new(std::env::current_exe().expect("the test binary's path"))
            .env(FUNCTION_VAR, setup.env_value())
            .envs(api.function_env())
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("the log file, twice"))
            .stderr(output)
            .spawn()
            .expect("the function process starts");
        let client = reqwest::Client::builder()
            .timeout(INVOCATION_TIMEOUT)
            .build()
            .expect("an HTTP client");
        Some(Deployed {
            api,
            function,
            log,
            client,
        })
    }

    /// POSTs `body` to the function URL at `path`, with `Idempotency-Key: key` if given.
    pub async fn post_to_url(&self, path: &str, key: Option<&str>, body: &str) -> Answer {
        let mut request = self
            .client
            .post(self.api.function_url(path))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => self.failed(&format!("the function URL did not answer: {error}")),
        };
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    value.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let body = response.text().await.unwrap_or_else(|error| {
            self.failed(&format!("the function URL's body was not read: {error}"))
        });
        Answer {
            status,
            headers,
            body,
        }
    }

    /// Invokes the function with `event` through the invoke API, and reads the HTTP answer
    /// out of the response it returned for API Gateway.
    pub async fn invoke(&self, event: &Value) -> Answer {
        let response = match self
            .client
            .post(self.api.invoke_url())
            .body(event.to_string())
            .send()
            .await
        {
            Ok(response) => response,
            Err(error) => self.failed(&format!("the invoke API did not answer: {error}")),
        };
        let text = response.text().await.unwrap_or_default();
        let returned: Value = serde_json::from_str(&text).unwrap_or_else(|error| {
            self.failed(&format!("the function returned no JSON ({error}): {text}"))
        });
        answer_for_api_gateway(&returned)
            .unwrap_or_else(|| self.failed(&format!("not an API Gateway response: {returned}")))
    }

    /// Fails the test with `what`, and the function's log.
    fn failed(&self, what: &str) -> ! {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        panic!("{what}\nthe function's log:\n{log}");
    }
}

impl Drop for Deployed {
    fn drop(&mut self) {
        let _ = self.function.kill();
        let _ = self.function.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The HTTP answer in a response for API Gateway (REST or HTTP API): `statusCode`, `headers`
/// and `multiValueHeaders`, `body` (base64 when `isBase64Encoded`, which these tests never
/// expect).
fn answer_for_api_gateway(returned: &Value) -> Option<Answer> {
    let status = u16::try_from(returned["statusCode"].as_u64()?).ok()?;
    assert_ne!(
        returned["isBase64Encoded"], true,
        "every answer of this function is text: {returned}"
    );
    let mut headers = Vec::new();
    if let Some(single) = returned["headers"].as_object() {
        for (name, value) in single {
            headers.push((name.to_ascii_lowercase(), value.as_str()?.to_owned()));
        }
    }
    if let Some(multi) = returned["multiValueHeaders"].as_object() {
        for (name, values) in multi {
            for value in values.as_array()? {
                headers.push((name.to_ascii_lowercase(), value.as_str()?.to_owned()));
            }
        }
    }
    let body = returned["body"].as_str().unwrap_or_default().to_owned();
    Some(Answer {
        status,
        headers,
        body,
    })
}
