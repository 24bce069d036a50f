//! Load generator for the gRPC `Probe` call: N concurrent clients over loopback for a fixed time,
//! reporting probes per second and latency percentiles. Also times a shard download.
//!
//! cargo run --release --example probe_load -- http://127.0.0.1:7070 16 10 KRNvKR
//!   (server, clients, seconds, table to probe positions of and to download)

use proto::v1::tablebase_client::TablebaseClient;
use proto::v1::{DownloadShardRequest, ProbeRequest};
use std::time::{Duration, Instant};
use xiangqi::Color;
use xqtb_core::{Signature, TableIndex};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let server = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:7070".into());
    let clients: usize = args.get(2).map_or(Ok(16), |s| s.parse())?;
    let secs: u64 = args.get(3).map_or(Ok(10), |s| s.parse())?;
    let sig: Signature = args.get(4).map_or("KRvKN", |s| s.as_str()).parse()?;
    // Legal positions spread over the table.
    let index = TableIndex::new(sig);
    let step = (index.size() / 5000).max(1);
    let fens: Vec<String> = (0..index.size())
        .step_by(step as usize)
        .filter_map(|slot| index.board(slot, Color::Red))
        .filter(|b| !b.opponent_in_check() && b.has_legal_move())
        .map(|b| b.fen())
        .collect();
    let fens = std::sync::Arc::new(fens);
    let channel = tonic::transport::Endpoint::from_shared(server.clone())?
        .connect()
        .await?;
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for i in 0..clients {
        let (channel, fens) = (channel.clone(), std::sync::Arc::clone(&fens));
        tasks.push(tokio::spawn(async move {
            let mut c = TablebaseClient::new(channel);
            let mut lat = Vec::new();
            let mut k = i * 7919;
            while Instant::now() < deadline {
                let fen = fens[k % fens.len()].clone();
                k += 13;
                let t = Instant::now();
                c.probe(ProbeRequest {
                    fen,
                    ..Default::default()
                })
                .await
                .expect("probe");
                lat.push(t.elapsed().as_secs_f64());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await?);
    }
    all.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)] * 1e3;
    println!(
        "{clients} clients, {secs} s: {} probes, {:.0} probes/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        all.len(),
        all.len() as f64 / secs as f64,
        pct(0.5),
        pct(0.99),
        all.last().unwrap() * 1e3
    );
    let mut c = TablebaseClient::new(channel);
    let t = Instant::now();
    let mut stream = c
        .download_shard(DownloadShardRequest {
            signature: sig.name(),
            rules: String::new(),
        })
        .await?
        .into_inner();
    let mut bytes = 0usize;
    while let Some(chunk) = stream.message().await? {
        bytes += chunk.data.len();
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "download {sig}: {bytes} bytes in {s:.3} s ({:.1} MB/s)",
        bytes as f64 / s / 1e6
    );
    Ok(())
}
