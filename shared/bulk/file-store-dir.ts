// Bulk Data files in a folder (shared by the API nodes, or beside the embedded database): one file per
// chunk, `<root>/<job>/<file>.<n>`, written under a temporary name and renamed into place, so a reader
// never sees half a chunk and a resumed job replaces what a killed one left.
import { mkdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { assertFileIds, type BulkFileStore } from './file-store-contract'

export class DirFileStore implements BulkFileStore {
  readonly inDatabase = false

  constructor(private readonly root: string) {}

  async putChunk(jobId: string, fileId: string, n: number, text: string): Promise<void> {
    assertFileIds(jobId, fileId)
    const dir = join(this.root, jobId)
    await mkdir(dir, { recursive: true })
    const path = join(dir, `${fileId}.${n}`)
    const tmp = `${path}.${crypto.randomUUID()}.tmp`
    await Bun.write(tmp, text)
    await rename(tmp, path)
  }

  read(jobId: string, fileId: string, chunks: number): ReadableStream<Uint8Array> {
    assertFileIds(jobId, fileId)
    let n = 0
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (n >= chunks) return controller.close()
        const file = Bun.file(join(this.root, jobId, `${fileId}.${n}`))
        n++
        try {
          controller.enqueue(await file.bytes())
        } catch (err) {
          controller.error(err)
        }
      },
    })
  }

  async removeJob(jobId: string): Promise<void> {
    assertFileIds(jobId)
    await rm(join(this.root, jobId), { recursive: true, force: true })
  }
}
