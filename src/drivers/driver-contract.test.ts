import { runDriverContract } from './driver-contract.case.js'

runDriverContract()
