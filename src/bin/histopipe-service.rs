fn main() -> std::process::ExitCode {
    histopipe_cli::service::main(histopipe::SERVICE_TOOLS)
}
