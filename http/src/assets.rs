//! The web page's files (`web/` of the repository), embedded at compile time: the page works
//! offline, nothing is fetched from anywhere else.

/// One embedded file.
#[derive(Clone, Copy, Debug)]
pub struct Asset {
    /// The URL path it is served at.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its contents.
    pub body: &'static str,
}

/// `text/html; charset=utf-8`.
pub const HTML: &str = "text/html; charset=utf-8";
/// `text/css; charset=utf-8`.
pub const CSS: &str = "text/css; charset=utf-8";
/// `text/javascript; charset=utf-8`.
pub const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the page; `/` is `index.html`.
pub const ASSETS: [Asset; 7] = [
    Asset {
        path: "/",
        content_type: HTML,
        body: include_str!("../../web/index.html"),
    },
    Asset {
        path: "/index.html",
        content_type: HTML,
        body: include_str!("../../web/index.html"),
    },
    Asset {
        path: "/style.css",
        content_type: CSS,
        body: include_str!("../../web/style.css"),
    },
    Asset {
        path: "/glyphs.js",
        content_type: JS,
        body: include_str!("../../web/glyphs.js"),
    },
    Asset {
        path: "/xiangqi.js",
        content_type: JS,
        body: include_str!("../../web/xiangqi.js"),
    },
    Asset {
        path: "/board.js",
        content_type: JS,
        body: include_str!("../../web/board.js"),
    },
    Asset {
        path: "/app.js",
        content_type: JS,
        body: include_str!("../../web/app.js"),
    },
];
