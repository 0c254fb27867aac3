//! The OpenAPI document's frame: info, tags, security scheme.

use utoipa::Modify;
use utoipa::OpenApi;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};

/// Root of the OpenAPI document; paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Cairn",
        description = "A memory store for LLM agents: offload large tool outputs, keep a `mem://` pointer and a summary, fetch exact slices later.",
        license(name = "Apache-2.0")
    ),
    tags(
        (name = "memories", description = "Store, list, describe and delete memories"),
        (name = "slices", description = "Read exact parts of a memory: lines, bytes, chunks, pointers, whole content"),
        (name = "usage", description = "Provider usage, cost, budgets and the namespace's statistics"),
        (name = "context", description = "Keep an agent's context small: compress message lists, govern by token tiers"),
        (name = "health", description = "Liveness and readiness"),
        (name = "admin", description = "Retention (prune), garbage collection and integrity checks; admin keys only"),
        (name = "tokens", description = "Token counts of texts and message lists, with their method"),
        (name = "portability", description = "Export a namespace as one archive and import it elsewhere"),
    ),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}
