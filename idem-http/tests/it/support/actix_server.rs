//! An actix-web server on a free loopback port, on a thread of its own, for the tests that
//! hold the actix-web middleware against the tower layer.

#[allow(unused_macros)] // not every binary that shares the support code serves actix-web
/// Starts an actix-web server of `$workers` workers whose apps the factory `$app` makes; its
/// URL (`http://127.0.0.1:PORT`) and its handle, which stops it.
macro_rules! actix_serve {
    ($workers:expr, $app:expr) => {{
        let (started, serving) = std::sync::mpsc::channel();
        let app = $app;
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = actix_web::HttpServer::new(app)
                    .workers($workers)
                    .disable_signals()
                    .shutdown_timeout(30)
                    .bind(("127.0.0.1", 0))
                    .unwrap();
                let url = format!("http://{}", server.addrs()[0]);
                let server = server.run();
                started.send((url, server.handle())).unwrap();
                server.await
            })
        });
        let (url, handle): (String, actix_web::dev::ServerHandle) = serving
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the actix-web server starts");
        (url, handle)
    }};
}
