/** Device profiles: "what a VM may ask for", as groups of `resources:`, `trait:` and `accel:` keys. */

export interface DeviceProfile {
  id: number
  uuid: string
  name: string
  description: string | null
  /** Each group is a flat string → string map, as Nova reads it. */
  groups: Record<string, string>[]
  createdAt: string
  updatedAt: string | null
}
