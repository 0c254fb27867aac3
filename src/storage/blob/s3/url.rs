//! `s3://bucket/prefix` URLs of the S3 blob store.

use object_store::aws::AmazonS3ConfigKey;

/// Where an S3 store lives: `s3://bucket/prefix?option=value&…`.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Url {
    /// Bucket name.
    pub bucket: String,
    /// Key prefix, without leading or trailing `/` (empty: the bucket's root).
    pub prefix: String,
    /// object_store S3 options from the query, applied over the `AWS_*` environment.
    pub options: Vec<(AmazonS3ConfigKey, String)>,
}

impl S3Url {
    /// Parses `s3://bucket[/prefix][?key=value&…]`. Query keys are
    /// object_store's S3 option names (`endpoint`, `region`, `allow_http`,
    /// `access_key_id`, …); they win over the `AWS_*` variables.
    pub fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| "an S3 blob store URL starts with s3://".to_owned())?;
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
        if bucket.is_empty() {
            return Err("the S3 blob store URL names no bucket (s3://bucket/prefix)".into());
        }
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
            .map_err(|e| format!("cannot read the S3 URL's options: {e}"))?;
        let mut options = Vec::new();
        for (name, value) in pairs {
            let key: AmazonS3ConfigKey = name
                .parse()
                .map_err(|_| format!("unknown S3 option `{name}` in the blob store URL"))?;
            if key == AmazonS3ConfigKey::Bucket {
                return Err("the bucket is the URL's host, not an option".into());
            }
            options.push((key, value));
        }
        Ok(Self {
            bucket: bucket.to_owned(),
            prefix: prefix.trim_matches('/').to_owned(),
            options,
        })
    }
}

/// Names the options but never their values (credentials may be among them).
impl std::fmt::Debug for S3Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.options.iter().map(|(key, _)| key.as_ref()).collect();
        f.debug_struct("S3Url")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("options", &keys)
            .finish()
    }
}
