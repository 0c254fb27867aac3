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
    constrain(doc);
    close_flattened_bodies(doc);
}

/// Pattern of a memory id or prefix in a path: 12 to 64 hex characters.
const ID_PATTERN: &str = "^[0-9a-fA-F]{12,64}$";

/// Writes into the document the rules the server checks that the derives
/// cannot state: a memory id's form in every `/v1/memories/{id}` path, the
/// accepted forms of `since` and `until` wherever they are taken, and each
/// put field's rule ([`crate::model::put::rules`], which the domain
/// validates by) in the query string and the JSON body of a put. A
/// generated client (or a fuzzer) that follows the document then sends
/// nothing the server refuses.
fn constrain(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::ParameterIn;
    use utoipa::openapi::schema::{ObjectBuilder, Schema};
    use utoipa::openapi::{RefOr, Type};
    for (path, item) in &mut doc.paths.paths {
        let memory_path = path.starts_with("/v1/memories/{id}");
        let put = path == "/v1/memories";
        for (method, operation) in operations_mut(item) {
            for parameter in operation.parameters.iter_mut().flatten() {
                let pattern = match (&parameter.parameter_in, parameter.name.as_str()) {
                    (ParameterIn::Path, "id") if memory_path => ID_PATTERN,
                    (ParameterIn::Query, "since" | "until") => crate::model::filter::TIME_PATTERN,
                    (ParameterIn::Query, name) if put && method == "post" => {
                        if let Some(schema) = parameter.schema.as_mut() {
                            put_rule(schema, name, true);
                        }
                        continue;
                    }
                    _ => continue,
                };
                parameter.schema = Some(RefOr::T(Schema::Object(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some(pattern))
                        .build(),
                )));
            }
        }
    }
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    if let Some(RefOr::T(Schema::Object(fields))) = components.schemas.get_mut("PutFields") {
        for (name, schema) in &mut fields.properties {
            put_rule(schema, name, false);
        }
    }
}

/// Writes put field `name`'s rule into its schema (`in_query`: the query
/// string's form, where tags are one comma-separated string).
fn put_rule(
    schema: &mut utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    name: &str,
    in_query: bool,
) {
    use utoipa::Number;
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ArrayItems, ObjectBuilder, Schema, Type};

    use crate::model::put::rules;
    let RefOr::T(schema) = schema else {
        return;
    };
    let text = rules::TEXT_FIELDS.iter().find(|(field, _)| *field == name);
    match (name, schema) {
        (_, Schema::Object(object)) if text.is_some() => {
            object.max_length = text.map(|(_, max)| *max);
            object.pattern = Some(rules::TEXT_PATTERN.to_owned());
        }
        ("type", Schema::Object(object)) => {
            object.pattern = Some(rules::TYPE_PATTERN.to_owned());
        }
        ("mime", Schema::Object(object)) => {
            object.max_length = Some(rules::MIME_MAX_CHARS);
            object.pattern = Some(rules::MIME_PATTERN.to_owned());
        }
        ("tags", Schema::Object(object)) if in_query => {
            object.pattern = Some(rules::TAGS_PATTERN.to_owned());
        }
        ("tags", Schema::Array(array)) => {
            array.max_items = Some(rules::MAX_TAGS);
            array.items = ArrayItems::RefOrSchema(Box::new(RefOr::T(Schema::Object(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(rules::TAG_PATTERN))
                    .build(),
            ))));
        }
        ("ttl_seconds", Schema::Object(object)) => {
            object.minimum = Some(Number::UInt(1));
            object.maximum = usize::try_from(rules::MAX_TTL_SECONDS)
                .ok()
                .map(Number::UInt);
        }
        _ => {}
    }
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
