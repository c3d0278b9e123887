//! The one way to serve a route. [`Routes::api`] takes `routes!(handler, ...)`: the handlers
//! are served on the paths and methods of their `#[utoipa::path]` attributes and those
//! operations enter the document in the same call, so a route cannot be served undocumented.
//! A route that is not an API operation (an HTML page) goes through [`Routes::page`], the
//! explicit exemption. Every registration is recorded, for [`crate::routes_registered`].

use axum::handler::Handler;
use axum::routing::get;
use axum::Router;
use services::Services;
use utoipa::openapi::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

/// A served route: its method, its full path (`{param}` as in the document) and whether the
/// document describes it (`false`: registered through [`Routes::page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub method: &'static str,
    pub path: String,
    pub documented: bool,
}

pub(crate) struct Routes {
    router: OpenApiRouter<Services>,
    served: Vec<Registered>,
}

impl Routes {
    pub fn new() -> Self {
        Routes {
            router: OpenApiRouter::new(),
            served: Vec::new(),
        }
    }

    /// Serves and documents the handlers of one `routes!(...)` (one path per call: the macro
    /// gives every handler of a call to every path of it).
    pub fn api(mut self, r: UtoipaMethodRouter<Services>) -> Self {
        for (path, item) in r.1.paths.iter() {
            for (method, op) in [
                ("GET", &item.get),
                ("POST", &item.post),
                ("PUT", &item.put),
                ("PATCH", &item.patch),
                ("DELETE", &item.delete),
            ] {
                if op.is_some() {
                    self.served.push(Registered {
                        method,
                        path: path.clone(),
                        documented: true,
                    });
                }
            }
        }
        self.router = self.router.routes(r);
        self
    }

    /// A `GET` page that is not an API operation, left out of the document on purpose.
    pub fn page<H, T>(mut self, path: &str, handler: H) -> Self
    where
        H: Handler<T, Services>,
        T: 'static,
    {
        self.served.push(Registered {
            method: "GET",
            path: path.to_string(),
            documented: false,
        });
        self.router = self.router.route(path, get(handler));
        self
    }

    pub fn merge(mut self, other: Routes) -> Self {
        self.served.extend(other.served);
        self.router = self.router.merge(other.router);
        self
    }

    /// `other` below `prefix` (handlers see the path without it, as with axum's `nest`).
    pub fn nest(mut self, prefix: &str, other: Routes) -> Self {
        self.served
            .extend(other.served.into_iter().map(|r| Registered {
                path: format!("{prefix}{}", r.path),
                ..r
            }));
        self.router = self.router.nest(prefix, other.router);
        self
    }

    /// The answer to unknown paths and to known paths with another method.
    pub fn fallback<H, T>(self, handler: H) -> Self
    where
        H: Handler<T, Services> + Clone,
        T: 'static,
    {
        let (router, doc) = self.router.split_for_parts();
        let mut router = OpenApiRouter::from(
            router
                .fallback(handler.clone())
                .method_not_allowed_fallback(handler),
        );
        *router.get_openapi_mut() = doc;
        Routes {
            router,
            served: self.served,
        }
    }

    pub fn into_parts(self) -> (Router<Services>, OpenApi, Vec<Registered>) {
        let (router, doc) = self.router.split_for_parts();
        (router, doc, self.served)
    }
}
