//! The house's rules, read from the workspace's sources: each shared rule in one home
//! (`one_home`), modules that read downward only (`layers`), and files of one job each with
//! no hidden second path to an item (`rules`).

mod cli_layers;
mod layers;
mod one_home;
mod rules;
mod sources;
