//! The web demo is served by the gateway itself: the page and everything it loads.

use airlock_tests::world::world;

#[tokio::test]
async fn the_web_demo_page_and_everything_it_loads_come_from_the_gateway() {
    let w = world().await;
    let client = reqwest::Client::new();
    let page = client.get(w.gw.url("/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.text().await.unwrap();

    let mut assets = Vec::new();
    for attribute in ["src=\"", "href=\""] {
        for (start, _) in html.match_indices(attribute) {
            let rest = &html[start + attribute.len()..];
            assets.push(rest[..rest.find('"').unwrap()].to_owned());
        }
    }
    assert_eq!(assets, ["/app.js", "/vendor/highlight.css", "/style.css"], "{html}");
    for asset in &assets {
        assert!(asset.starts_with('/'), "{asset} would load from elsewhere");
        let response = client.get(w.gw.url(asset)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{asset}");
        let kind = response.headers()["content-type"].to_str().unwrap().to_owned();
        let expected = if asset.ends_with(".js") { "text/javascript" } else { "text/css" };
        assert!(kind.starts_with(expected), "{asset}: {kind}");
        let body = response.text().await.unwrap();
        // A stylesheet loads through `url(…)` and `@import`; a comment may name a site.
        let loads = match asset.ends_with(".css") {
            true => body.contains("url(") || body.contains("@import"),
            false => body.contains("https://") || body.contains("http://"),
        };
        assert!(!loads, "{asset} loads nothing remote");
    }
}
