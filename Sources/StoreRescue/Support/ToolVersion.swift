/// The name and version this tool records in what it writes (backup manifests, reports).
public enum ToolVersion {
    public static let name = "storerescue"
    public static let current = "0.1.0"
}
