//! The generator's word lists, kept as plain text.

use std::sync::LazyLock;

/// Every list, split once.
pub static VOCABULARY: LazyLock<Vocabulary> = LazyLock::new(Vocabulary::new);

/// The word lists the generator draws from; earlier entries are drawn more often.
pub struct Vocabulary {
    /// Words of messages and comments.
    pub words: Vec<&'static str>,
    /// Identifiers of code.
    pub idents: Vec<&'static str>,
    /// Type names of code.
    pub types: Vec<&'static str>,
    /// Method names of code.
    pub methods: Vec<&'static str>,
    /// Logging targets.
    pub modules: Vec<&'static str>,
    /// Host names and addresses.
    pub hosts: Vec<&'static str>,
    /// URL path segments.
    pub segments: Vec<&'static str>,
    /// Directory names.
    pub dirs: Vec<&'static str>,
}

impl Vocabulary {
    fn new() -> Self {
        Self {
            words: WORDS.split_whitespace().collect(),
            idents: IDENTS.split_whitespace().collect(),
            types: TYPES.split_whitespace().collect(),
            methods: METHODS.split_whitespace().collect(),
            modules: MODULES.split_whitespace().collect(),
            hosts: HOSTS.split_whitespace().collect(),
            segments: SEGMENTS.split_whitespace().collect(),
            dirs: DIRS.split_whitespace().collect(),
        }
    }
}

const WORDS: &str = "\
    request connection cache user session token worker queue batch record file buffer index \
    shard replica timeout retry handler config value update insert delete select commit rollback \
    lock snapshot segment offset partition leader follower heartbeat lease stream frame chunk \
    block page row column table schema query plan cost limit quota budget bucket object key \
    entry node cluster region zone service endpoint route client server proxy upstream \
    downstream payload header body status error warning failed succeeded started stopped \
    completed skipped pending running expired evicted loaded saved flushed compacted merged \
    split resolved rejected accepted scheduled cancelled received sent parsed validated missing \
    invalid unexpected duplicate stale empty full slow fast new old primary secondary local \
    remote the a for from to with after before while during in on of and not because since until \
    per each all some no one two several many memory disk network socket thread process task job \
    step stage pipeline artifact build test deploy release version tag";

const IDENTS: &str = "\
    buf len idx count total offset limit result value key item items entry entries node nodes \
    path name size data bytes line lines start end state config ctx req resp err conn pool cache \
    store reader writer stream frame chunk hash digest id ids user_id session_id request_id \
    timeout_ms retry_count max_len min_len batch_size page_size cursor next prev head tail left \
    right parent child children queue tasks handle guard tx rx sender receiver deadline elapsed \
    metrics labels opts args";

const TYPES: &str = "\
    String Vec<u8> Bytes Config Request Response Error Result Frame Chunk Record Entry Node \
    Store Reader Writer Handle Session Token Index Segment Manifest Header Payload Cursor Batch \
    Queue Pool Client Server Router Metrics Options Context State Shard";

const METHODS: &str = "\
    get insert remove push pop len is_empty clone iter map filter collect unwrap_or ok_or as_ref \
    to_string parse read write flush send recv lock split join extend contains find";

const MODULES: &str = "\
    http.server http.client db.pool db.query cache.lru scheduler auth.jwt storage.s3 storage.fs \
    queue.consumer queue.producer index.builder compactor replication gc metrics config router \
    grpc migrations";

const HOSTS: &str = "\
    db-1.internal db-2.internal cache-0.internal api.example.com 10.0.3.17 10.0.4.122 \
    s3.us-east-1.amazonaws.com queue.internal auth.internal localhost";

const SEGMENTS: &str = "\
    api v1 v2 users orders items search admin reports sessions files uploads jobs events metrics \
    health config accounts teams";

const DIRS: &str = "\
    src lib core util storage http domain tests parser net cli models handlers services internal \
    pkg cmd app common";
