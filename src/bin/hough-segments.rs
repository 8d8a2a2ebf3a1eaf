fn main() -> std::process::ExitCode {
    histopipe_cli::main::<histopipe::hough_segments::HoughSegments>()
}
