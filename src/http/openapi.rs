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
        (name = "exchanges", description = "The exchange ledger: every proxied request, what it cost against the same request sent untouched, and what the model saw"),
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

/// Completes the document from how the routes are built, so that it lists
/// what the server really answers:
/// - the error answers of the shared extractors on every operation that uses
///   them: a JSON body (400 malformed, 413 too large, 422 wrong types), an
///   `{id}` path (400 invalid id, 404 unknown, 409 ambiguous prefix), a
///   bearer key (401), an admin route (403);
/// - a unique `operationId` per operation (handlers of several modules share
///   a name, such as `get`): a repeated one becomes `<method>_<path words>`;
/// - JSON request bodies that flatten a shared noun (a put's fields, a
///   prune's filter) as one closed object, see [`close_flattened_bodies`].
pub fn complete(doc: &mut utoipa::openapi::OpenApi) {
    use std::collections::HashMap;
    let mut seen: HashMap<String, usize> = HashMap::new();
    for item in doc.paths.paths.values() {
        for (_, operation) in operations(item) {
            if let Some(id) = &operation.operation_id {
                *seen.entry(id.clone()).or_default() += 1;
            }
        }
    }
    for (path, item) in &mut doc.paths.paths {
        for (method, operation) in operations_mut(item) {
            if operation
                .operation_id
                .as_ref()
                .is_some_and(|id| seen.get(id).copied().unwrap_or(0) > 1)
            {
                operation.operation_id = Some(derived_id(method, path));
            }
            let json_body = operation
                .request_body
                .as_ref()
                .is_some_and(|b| b.content.contains_key("application/json"));
            if json_body {
                add_error(
                    operation,
                    "400",
                    "Malformed JSON body, or a field out of range",
                );
                add_error(operation, "413", "Body over the JSON size limit");
                add_error(operation, "422", "A field of the wrong type, or missing");
            }
            if path.contains("{id}") {
                add_error(operation, "400", "Not an id: 12 to 64 hex characters");
                add_error(operation, "404", "No such memory in this namespace");
                add_error(operation, "409", "The id prefix matches several memories");
            }
            if operation.security.is_some() {
                add_error(
                    operation,
                    "401",
                    "Missing or unknown API key (when keys are configured)",
                );
            }
            if path.starts_with("/v1/admin/") {
                add_error(operation, "403", "Not an admin key");
            }
        }
    }
    close_flattened_bodies(doc);
}

/// utoipa writes a struct with a `#[serde(flatten)]` field as `allOf` the
/// flattened type and its own fields, which cannot say that no other field
/// is accepted. Every JSON request body of this API refuses unknown fields,
/// so each such body becomes one object of all the fields, closed with
/// `additionalProperties: false`, as a body without a flattened field is.
fn close_flattened_bodies(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{AdditionalProperties, Object, Schema};
    use utoipa::openapi::{RefOr, Type};
    let mut bodies: Vec<String> = Vec::new();
    for item in doc.paths.paths.values() {
        for (_, operation) in operations(item) {
            let json = operation
                .request_body
                .as_ref()
                .and_then(|b| b.content.get("application/json"));
            if let Some(RefOr::Ref(r)) = json.and_then(|c| c.schema.as_ref())
                && let Some(name) = r.ref_location.strip_prefix("#/components/schemas/")
            {
                bodies.push(name.to_owned());
            }
        }
    }
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    for name in bodies {
        let Some(RefOr::T(Schema::AllOf(all))) = components.schemas.get(&name) else {
            continue;
        };
        let mut merged = Object::with_type(Type::Object);
        merged.description.clone_from(&all.description);
        let mut whole = true;
        for part in &all.items {
            let object = match part {
                RefOr::T(Schema::Object(object)) => Some(object),
                RefOr::Ref(r) => r
                    .ref_location
                    .strip_prefix("#/components/schemas/")
                    .and_then(|name| components.schemas.get(name))
                    .and_then(|schema| match schema {
                        RefOr::T(Schema::Object(object)) => Some(object),
                        _ => None,
                    }),
                _ => None,
            };
            let Some(object) = object else {
                whole = false;
                break;
            };
            for (field, schema) in &object.properties {
                merged.properties.insert(field.clone(), schema.clone());
            }
            merged.required.extend(object.required.iter().cloned());
        }
        if whole {
            merged.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
            components
                .schemas
                .insert(name, RefOr::T(Schema::Object(merged)));
        }
    }
}

/// `get_memories_id_content` for `GET /v1/memories/{id}/content`.
fn derived_id(method: &str, path: &str) -> String {
    let words: Vec<&str> = path
        .trim_start_matches("/v1/")
        .split('/')
        .map(|w| w.trim_matches(|c| c == '{' || c == '}'))
        .filter(|w| !w.is_empty())
        .collect();
    format!("{method}_{}", words.join("_"))
}

fn add_error(operation: &mut utoipa::openapi::path::Operation, status: &str, description: &str) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    if operation.responses.responses.contains_key(status) {
        return;
    }
    let response = ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build();
    operation
        .responses
        .responses
        .insert(status.to_owned(), response.into());
}

fn operations(
    item: &utoipa::openapi::PathItem,
) -> impl Iterator<Item = (&'static str, &utoipa::openapi::path::Operation)> {
    [
        ("get", &item.get),
        ("put", &item.put),
        ("post", &item.post),
        ("delete", &item.delete),
        ("patch", &item.patch),
    ]
    .into_iter()
    .filter_map(|(m, op)| op.as_ref().map(|op| (m, op)))
}

fn operations_mut(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = (&'static str, &mut utoipa::openapi::path::Operation)> {
    [
        ("get", &mut item.get),
        ("put", &mut item.put),
        ("post", &mut item.post),
        ("delete", &mut item.delete),
        ("patch", &mut item.patch),
    ]
    .into_iter()
    .filter_map(|(m, op)| op.as_mut().map(|op| (m, op)))
}
