fn main() -> std::process::ExitCode {
    histopipe_cli::main::<histopipe::iradon::Iradon>()
}
