//! Who is looking at a console page: the signed-in caller, the namespace
//! shown, the session's CSRF token. The sign-in (`login.rs`) makes one per
//! request; every page and the layout read it.

use crate::http::auth::Caller;

/// The viewer of a page: whose data it shows and the token its forms carry.
#[derive(Clone, Debug)]
pub struct Viewer {
    /// The signed-in key's caller.
    pub caller: Caller,
    /// The namespace shown (the caller's own, or any for an admin).
    pub namespace: String,
    /// The CSRF token of this session.
    pub csrf: String,
    /// Whether a key signed in (there is something to sign out of).
    pub signed_in: bool,
}

impl Viewer {
    /// `path` with the viewed namespace kept when it is not the caller's own.
    pub fn href(&self, path: &str) -> String {
        if self.namespace == self.caller.namespace {
            return path.to_owned();
        }
        let sep = if path.contains('?') { '&' } else { '?' };
        let ns = serde_urlencoded::to_string([("ns", &self.namespace)]).unwrap_or_default();
        format!("{path}{sep}{ns}")
    }
}

/// A viewer of namespace `alpha` for tests.
#[cfg(test)]
pub fn test_viewer() -> Viewer {
    Viewer {
        caller: Caller {
            namespace: "alpha".to_owned(),
            admin: false,
        },
        namespace: "alpha".to_owned(),
        csrf: "t".repeat(64),
        signed_in: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_another_namespace() {
        let viewer = Viewer {
            caller: Caller {
                namespace: "ops".to_owned(),
                admin: true,
            },
            namespace: "a b".to_owned(),
            csrf: "t".to_owned(),
            signed_in: true,
        };
        assert_eq!(viewer.href("/ui/"), "/ui/?ns=a+b");
        assert_eq!(viewer.href("/ui/m?x=1"), "/ui/m?x=1&ns=a+b");
    }
}
